/* colibri's rANS bridge: encode, parse and decode one int4-rans256-g0 record. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tetrad.h"

int main(void) {
    enum { SB = 10, M = 1 << SB, N = 5001 };
    uint32_t freq[16], start[16], acc = 0;
    uint16_t slot[M];
    uint8_t nib[N], *rec, *packed;
    uint64_t cap, n_symbols = 0, packed_bytes = 0;
    int64_t len;
    int32_t e;
    int s, k;

    /* A table: symbol 8 dominant, every other symbol rare. */
    for (s = 0; s < 16; s++) freq[s] = (s == 8) ? M - 15 * 8 : 8;
    for (s = 0; s < 16; s++) {
        start[s] = acc;
        for (k = 0; k < (int)freq[s]; k++) slot[acc + (uint32_t)k] = (uint16_t)s;
        acc += freq[s];
    }
    for (k = 0; k < N; k++) nib[k] = (uint8_t)(k % 9 == 0 ? k % 16 : 8);

    cap = rc_record_bound(N, 256);
    rec = calloc(cap + 64, 1); /* + colibri's 64-byte slack; tetrad does not need it */
    len = rc_record_encode(nib, N, freq, start, slot, SB, 256, rec, cap);
    if (len < 0) {
        fprintf(stderr, "encode: %s\n", rc_err_name((int32_t)len));
        return 1;
    }
    e = rc_record_parse(rec, (uint64_t)len, 256, &n_symbols, &packed_bytes);
    if (e != 0 || n_symbols != N || packed_bytes != (N + 1) / 2) return 1;
    packed = malloc(packed_bytes);
    e = rc_record_decode(rec, (uint64_t)len, 256, freq, start, slot, SB, -1, packed);
    if (e != 0) {
        fprintf(stderr, "decode: %s\n", rc_err_name(e));
        return 1;
    }
    for (k = 0; k < N; k++)
        if (((packed[k / 2] >> (4 * (k % 2))) & 15) != nib[k]) return 1;
    printf("%lld-byte record, decoded on %s\n", (long long)len, rc_path_name());
    /* Refusals are colibri's numbers and names. */
    if (rc_record_parse(rec, (uint64_t)len + 16, 256, NULL, NULL) != 8) return 1; /* E_LENGTH_MISMATCH */
    printf("%s %s\n", rc_err_name(-8), rc_err_name(rc_record_decode(rec, (uint64_t)len, 255, freq,
                                                                     start, slot, SB, 0, packed)));
    free(rec);
    free(packed);
    puts("ok");
    return 0;
}
