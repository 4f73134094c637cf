/*
 * tetrad.h: the C interface of libtetrad (libtetrad.so / libtetrad.dylib / libtetrad.a).
 *
 * libtetrad is built from the `capi/` crate of the tetrad repository
 * (`cargo build --release -p tetrad-capi`). It offers two surfaces:
 *
 *   1. tetrad's own ABI (tetrad_*): open a checkpoint (one safetensors shard or a directory
 *      of shards), prepare a tensor by name and [O, I], multiply with it (f32 or int8
 *      activations), decode it to dense bytes; CFS1 and int4-rans64-t1 encode/decode of
 *      caller buffers.
 *   2. colibri's rANS bridge (rc_*): the seven functions of colibri's librans_c, with its
 *      signatures, error numbers and names. Copied next to colibri's Python tools as
 *      librans_c.so, libtetrad is what they load.
 *
 * Conventions of the tetrad_* functions
 *   - Every buffer is a pointer and an explicit length (in elements of the pointed type).
 *     A NULL pointer is accepted only with length 0; otherwise the call is refused, class
 *     "E_NULL". Input and output buffers must not overlap.
 *   - Functions that can fail return an int32_t status: TETRAD_OK, TETRAD_REFUSED (the input
 *     or the call was refused; the class names why) or TETRAD_PANIC (an internal error was
 *     caught at the boundary, class "E_INTERNAL"; no panic ever unwinds into C).
 *   - The class ("E_TRUNCATED", ...) and a message of the calling thread's last
 *     status-returning call are read with tetrad_last_class() and tetrad_last_message(), as
 *     errno is. Each thread has its own.
 *   - After a failed call, output buffers hold unspecified bytes.
 *
 * Ownership
 *   - Handles (tetrad_container, tetrad_tensor) are opaque. The *_open / *_prepare function
 *     that returns one gives it to the caller, who releases it with the matching *_free
 *     (NULL is a no-op). A tensor holds a reference to its container, so the two may be
 *     freed in either order.
 *   - Strings returned by the library (classes, format names, version, rc_* names) are
 *     static: never free them.
 *   - The library never keeps a pointer to a caller buffer after a call returns.
 *
 * Thread safety
 *   - Handles are immutable once made: a container or a tensor may be used by any number of
 *     threads at once. Freeing a handle while another thread uses it is undefined.
 *   - The codec and bridge functions keep no state between calls (the rc_* arm selection
 *     reads the environment on each call).
 */
#ifndef TETRAD_H
#define TETRAD_H

#include <stddef.h>
#include <stdint.h>

#if defined(__cplusplus)
extern "C" {
#endif

/* ---- version ----------------------------------------------------------------------------- */

#define TETRAD_VERSION_MAJOR 0
#define TETRAD_VERSION_MINOR 1
#define TETRAD_VERSION_RELEASE 0
#define TETRAD_VERSION_NUMBER \
    (TETRAD_VERSION_MAJOR * 10000 + TETRAD_VERSION_MINOR * 100 + TETRAD_VERSION_RELEASE)

#define TETRAD_QUOTE(s) #s
#define TETRAD_EXPAND_AND_QUOTE(s) TETRAD_QUOTE(s)
#define TETRAD_VERSION_STRING                                                                \
    TETRAD_EXPAND_AND_QUOTE(TETRAD_VERSION_MAJOR) "." TETRAD_EXPAND_AND_QUOTE(              \
        TETRAD_VERSION_MINOR) "." TETRAD_EXPAND_AND_QUOTE(TETRAD_VERSION_RELEASE)

/* The library's version as MAJOR*10000 + MINOR*100 + RELEASE; compare it with
 * TETRAD_VERSION_NUMBER to detect a header/library mismatch at run time. */
uint32_t tetrad_version_number(void);

/* The library's version as a static string, e.g. "0.1.0". */
const char *tetrad_version_string(void);

/* ---- status and errors ------------------------------------------------------------------- */

/* The call succeeded. */
#define TETRAD_OK 0
/* The input or the call was refused; tetrad_last_class() names why. */
#define TETRAD_REFUSED 1
/* An internal error was caught at the boundary (class "E_INTERNAL"). */
#define TETRAD_PANIC 2

/* The class of the calling thread's last status-returning call: "OK" after a success, else
 * its refusal class ("E_NULL", "E_TRUNCATED", "E_STREAM_FINAL_STATE", ...). Static string. */
const char *tetrad_last_class(void);

/* Copies the message of the calling thread's last status-returning call into buf (buf_len
 * bytes; NUL-terminated and truncated to fit when buf_len > 0; buf may be NULL when buf_len
 * is 0) and returns the message's full length in bytes, without the NUL, as snprintf does.
 * The message is empty after a success. */
size_t tetrad_last_message(char *buf, size_t buf_len);

/* ---- containers and prepared tensors ----------------------------------------------------- */

/* An opened checkpoint: one safetensors shard or every *.safetensors of a directory. */
typedef struct tetrad_container tetrad_container;

/* A tensor of a container, prepared with its name and [O, I]. */
typedef struct tetrad_tensor tetrad_tensor;

/* Opens the shard file or directory at path (path_len bytes; no NUL terminator needed) with
 * every container check (strict shard reader, stamps ingested and verified, CFS1 containers
 * through the CFS1 checks) and stores a new handle in *out (NULL on failure). */
int32_t tetrad_container_open(const char *path, size_t path_len, tetrad_container **out);

/* Releases a container handle; NULL is a no-op. Tensors prepared from it stay valid. */
void tetrad_container_free(tetrad_container *c);

/* Prepares the tensor name (name_len bytes, UTF-8) with the [o, i] the model configuration
 * gives and stores a new handle in *out (NULL on failure). Its format is decided here: by
 * its colibri.fmt stamp (verified against the bytes) or by byte arithmetic, never guessed;
 * a compressed tensor's record or blob framing is checked. */
int32_t tetrad_tensor_prepare(const tetrad_container *c, const char *name, size_t name_len,
                              uint64_t o, uint64_t i, tetrad_tensor **out);

/* Releases a tensor handle; NULL is a no-op. */
void tetrad_tensor_free(tetrad_tensor *t);

/* The tensor's format name ("int4-row", "int4-rans256-g0", "int4-rans64-t1", "mxfp4", ...;
 * an int4-row weight of a CFS1 container reports "int4-row", what it decodes to). Static
 * string; NULL if t is NULL. */
const char *tetrad_tensor_format(const tetrad_tensor *t);

/* The number of bytes tetrad_tensor_decode writes: the dense weight bytes (the int4-row bytes
 * of a compressed tensor). 0 if t is NULL. */
uint64_t tetrad_tensor_decoded_len(const tetrad_tensor *t);

/* Decodes the tensor into out (exactly tetrad_tensor_decoded_len(t) bytes, else
 * "E_OUTPUT_LEN"): a copy for a dense format, a checked decode for a compressed one (a
 * corrupt record or blob is refused by name, never returned). */
int32_t tetrad_tensor_decode(const tetrad_tensor *t, uint8_t *out, size_t out_len);

/* y = x * W^T with f32 activations. x is S x I floats (x_len = s * I), y is S x O floats
 * (y_len = s * O), row-major. threads OS threads are used (0 counts as 1). A compressed
 * tensor is decoded tile by tile into the int4-row kernel: the result is bit-identical to
 * the dense int4-row product of its decoded bytes. The best kernel ISA of this CPU is used. */
int32_t tetrad_tensor_matmul_f32(const tetrad_tensor *t, const float *x, size_t x_len,
                                 size_t s, float *y, size_t y_len, size_t threads);

/* y = x * W^T with int8 activations: each row of x (S x I f32, as above) is quantized to int8
 * codes with one scale per row (sx = max|x| / 127, q = round_half_even(x / sx) clamped to
 * [-127, 127]; tetrad_quantize_acts gives the same codes) and the products are exact integer
 * dot products. Formats without an int8 path (f32, fp8) are refused by name. Allocates
 * s * I + s values for the codes on each call. */
int32_t tetrad_tensor_matmul_q8(const tetrad_tensor *t, const float *x, size_t x_len,
                                size_t s, float *y, size_t y_len, size_t threads);

/* Quantizes s rows of i f32 activations (x_len = s * i) into int8 codes q (q_len = s * i) and
 * per-row scales (scales_len = s), the rule tetrad_tensor_matmul_q8 applies. Non-finite
 * activations are refused ("E_KERNEL_NONFINITE_ACTIVATION"). */
int32_t tetrad_quantize_acts(const float *x, size_t x_len, size_t s, size_t i, int8_t *q,
                             size_t q_len, float *scales, size_t scales_len);

/* ---- CFS1 on caller buffers -------------------------------------------------------------- */

/* The output capacity tetrad_cfs1_compress needs for n input bytes: n + 73 (saturating).
 * Blobs themselves are never longer than n + 9. */
size_t tetrad_cfs1_bound(size_t n);

/* Compresses src (src_len bytes, below 4 GiB) as one CFS1 blob into dst (dst_cap >=
 * tetrad_cfs1_bound(src_len), else "E_DST_TOO_SMALL") and stores its length in *written.
 * rANS when it gains, else the raw fallback; deterministic. */
int32_t tetrad_cfs1_compress(const uint8_t *src, size_t src_len, uint8_t *dst, size_t dst_cap,
                             size_t *written);

/* Checks a CFS1 blob's header (every framing check that needs no output buffer) and stores
 * the number of bytes it decodes to in *raw_len. */
int32_t tetrad_cfs1_decoded_len(const uint8_t *src, size_t src_len, uint64_t *raw_len);

/* Decompresses the CFS1 blob src into dst (dst_cap bytes, at least the blob's raw length,
 * else "E_CAPACITY"; bytes past the raw length are never touched) and stores the decoded
 * length in *written (which may be NULL). */
int32_t tetrad_cfs1_decompress(const uint8_t *src, size_t src_len, uint8_t *dst,
                               size_t dst_cap, size_t *written);

/* ---- int4-rans64-t1 on caller buffers ---------------------------------------------------- */

/* The chunk size 2^20 bytes that tetrad pack writes. */
#define TETRAD_RANS64_DEFAULT_CHUNK_SHIFT 20

/* The output capacity tetrad_rans64_encode needs for n packed bytes with chunks of
 * 2^chunk_shift bytes (the shift is clamped to 12..26 here); 0 when n is above the format's
 * 2^48-byte limit. */
size_t tetrad_rans64_bound(size_t n, uint32_t chunk_shift);

/* Encodes src (packed int4 bytes) as an int4-rans64-t1 blob with chunks of 2^chunk_shift
 * bytes (12..26, else "E_CHUNK_SHIFT") into dst (dst_cap >= tetrad_rans64_bound(src_len,
 * chunk_shift), else "E_OUTPUT_LENGTH") and stores its length in *written. The bytes
 * depend only on src and chunk_shift. */
int32_t tetrad_rans64_encode(const uint8_t *src, size_t src_len, uint32_t chunk_shift,
                             uint8_t *dst, size_t dst_cap, size_t *written);

/* Parses an int4-rans64-t1 blob's header and chunk index and stores the number of bytes it
 * decodes to in *n_bytes. */
int32_t tetrad_rans64_decoded_len(const uint8_t *blob, size_t blob_len, uint64_t *n_bytes);

/* Decodes an int4-rans64-t1 blob into dst (exactly its decoded length, else
 * "E_OUTPUT_LENGTH") with the best decode arm, every chunk checked. */
int32_t tetrad_rans64_decode(const uint8_t *blob, size_t blob_len, uint8_t *dst,
                             size_t dst_len);

/* ---- colibri's rANS bridge (librans_c) --------------------------------------------------- *
 *
 * int4-rans256-g0 records with n_streams = 256, exactly as colibri's librans_c bridge
 * declares them. Numbers and names are colibri's rans_err:
 *
 *   0 OK                  6 E_OFFSETS_MONOTONIC  12 E_TABLE_SCALE          18 E_STREAM_LEFTOVER
 *   1 E_TRUNCATED         7 E_STREAM_SHORT       13 E_TABLE_FREQ_SUM       19 E_STREAM_FINAL_STATE
 *   2 E_EMPTY             8 E_LENGTH_MISMATCH    14 E_TABLE_START          20 E_SYMBOL_UNCODABLE
 *   3 E_COUNT_MISMATCH    9 E_PAD_NONZERO        15 E_TABLE_SLOT           21 E_SCRATCH
 *   4 E_OVERSIZE         10 E_UNALIGNED          16 E_STREAM_STATE_RANGE   22 E_NOMEM
 *   5 E_OFFSET_FIRST     11 E_NSTREAMS           17 E_STREAM_UNDERRUN      23 E_PATH_UNAVAILABLE
 *
 * Every entry pins n_streams == 256 (else E_NSTREAMS; rc_record_bound returns 0).
 * The table is freq[16], start[16] (the exclusive prefix sum of freq) and
 * slot_to_symbol[2^scale_bits], validated in this order: E_TABLE_SCALE (1..15), E_TABLE_START
 * (each start against the running sum), E_TABLE_FREQ_SUM, E_TABLE_SLOT.
 *
 * Paths (rans_path) and the tetrad decode arm each runs:
 *   0 scalar     tetrad's scalar arm (the spec's branchy loop)
 *   1 scalar_bf  tetrad's scalar-bf arm (closed-form renormalisation)
 *   2 neon       tetrad's neon arm (aarch64)
 *   3 avx512     tetrad's avx512-vbmi arm where the CPU has AVX-512 VBMI/VBMI2/CD, else its
 *                avx512 arm (AVX-512 F+BW)
 * tetrad's avx2 arm has no rans_path number and is not used by the bridge. path < 0 selects
 * as colibri does: RANS_PATH=scalar|scalar_bf|neon|avx512 forces a path (an unknown or
 * unavailable one gives E_PATH_UNAVAILABLE), else the best of avx512, neon and scalar_bf,
 * honouring RANS_AVX512=0 and RANS_NEON=0. An explicit path the CPU cannot run, or a number
 * above 3, gives E_PATH_UNAVAILABLE. Every arm writes the same bytes.
 *
 * Where colibri's bridge would dereference a NULL pointer, the argument's own check refuses
 * instead: nibbles E_SYMBOL_UNCODABLE; out, out_packed, out_nibbles E_SCRATCH; blob
 * E_TRUNCATED; freq, start, slot_to_symbol E_TABLE_FREQ_SUM, E_TABLE_START, E_TABLE_SLOT;
 * in_buf E_STREAM_UNDERRUN. A caught internal error (none is known) reports E_NOMEM.
 */

/* Encodes n nibbles (one per byte, values 0..15 that the table codes) as one record into out
 * (out_cap bytes; rc_record_bound(n, 256) is always enough). Returns the record length, or
 * the negated rans_err: E_NSTREAMS, a table error, E_EMPTY (n == 0), E_SYMBOL_UNCODABLE
 * (checked before anything is written), E_SCRATCH (out_cap too small). Deterministic. */
int64_t rc_record_encode(const uint8_t *nibbles, uint64_t n, const uint32_t *freq,
                         const uint32_t *start, const uint16_t *slot_to_symbol,
                         uint32_t scale_bits, uint32_t n_streams, uint8_t *out,
                         uint64_t out_cap);

/* colibri's worst-case record length for n_symbols nibbles under any valid table:
 * 1056 + round16(256 * (ceil((n_symbols/256 + 1) * 15 / 8) + 68)), 64-bit wrapping; 0 when
 * n_streams != 256. */
uint64_t rc_record_bound(uint64_t n_symbols, uint32_t n_streams);

/* Parses and validates a record (blob_len bytes; the pointer must be 4-byte aligned, else
 * E_UNALIGNED) in colibri's order: E_TRUNCATED (header), E_EMPTY, E_COUNT_MISMATCH,
 * E_OFFSET_FIRST, per stream E_OFFSETS_MONOTONIC then E_STREAM_SHORT, E_TRUNCATED (payload),
 * E_LENGTH_MISMATCH, E_OVERSIZE, E_PAD_NONZERO. On OK stores the counts through the pointers
 * that are not NULL. Reads nothing past blob_len. Returns a rans_err. */
int32_t rc_record_parse(const uint8_t *blob, uint64_t blob_len, uint32_t n_streams,
                        uint64_t *n_symbols, uint64_t *packed_bytes);

/* Parses a record, validates the table and decodes the record to packed bytes (out_packed
 * holds the record's packed_bytes; with an odd symbol count the last byte's high nibble is 0)
 * on the given path. Like colibri's, this is the fast path and does not prove the streams
 * genuine: tetrad decodes with every stream's seal checked, and a record whose streams break
 * it is decoded by the spec's plain decoder (the bytes colibri's scalar path writes) and OK
 * is returned. Verify with rc_stream_decode_checked, or use tetrad_tensor_decode, which
 * refuses. colibri asks for 64 readable bytes past blob_len (RANS_SLACK); tetrad reads
 * nothing past blob_len. Returns a rans_err. */
int32_t rc_record_decode(const uint8_t *blob, uint64_t blob_len, uint32_t n_streams,
                         const uint32_t *freq, const uint32_t *start,
                         const uint16_t *slot_to_symbol, uint32_t scale_bits, int32_t path,
                         uint8_t *out_packed);

/* Checked decode of one stream (in_size bytes) to n nibbles, one per byte. Returns OK or, in
 * this order, E_STREAM_UNDERRUN (fewer than 4 bytes), E_STREAM_STATE_RANGE (initial state
 * below 2^23), a table error, E_STREAM_LEFTOVER (bytes left unread), E_STREAM_FINAL_STATE
 * (final state not 2^23). out_nibbles is written as decoding goes, refusals included. */
int32_t rc_stream_decode_checked(const uint8_t *in_buf, uint64_t in_size, uint64_t n,
                                 const uint32_t *freq, const uint32_t *start,
                                 const uint16_t *slot_to_symbol, uint32_t scale_bits,
                                 uint8_t *out_nibbles);

/* The name of rans_err |e| ("OK", "E_TRUNCATED", ...; "E_UNKNOWN" outside 0..23). Static. */
const char *rc_err_name(int32_t e);

/* The name of the path that path < 0 selects now ("scalar", "scalar_bf", "neon", "avx512",
 * or "invalid" when RANS_PATH forces an unknown or unavailable one). Static. */
const char *rc_path_name(void);

#if defined(__cplusplus)
}
#endif

#endif /* TETRAD_H */
