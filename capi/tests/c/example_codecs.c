/* CFS1 and int4-rans64-t1 on caller buffers. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tetrad.h"

int main(void) {
    size_t n = 100000, k, len = 0;
    uint8_t *src = malloc(n), *blob, *back = malloc(n);
    uint64_t raw = 0;

    for (k = 0; k < n; k++) src[k] = (uint8_t)(0x88 ^ (k % 5 == 0 ? k % 3 : 0)); /* peaked int4 */

    /* CFS1: compress into a buffer of the bound, read the raw length back, decompress. */
    blob = malloc(tetrad_cfs1_bound(n));
    if (tetrad_cfs1_compress(src, n, blob, tetrad_cfs1_bound(n), &len) != TETRAD_OK) return 1;
    if (tetrad_cfs1_decoded_len(blob, len, &raw) != TETRAD_OK || raw != n) return 1;
    if (tetrad_cfs1_decompress(blob, len, back, n, NULL) != TETRAD_OK || memcmp(back, src, n)) return 1;
    printf("CFS1: %zu -> %zu bytes\n", n, len);
    /* A damaged blob is refused by name, never decoded to wrong bytes. */
    if (tetrad_cfs1_decompress(blob, len - 1, back, n, NULL) != TETRAD_REFUSED) return 1;
    printf("CFS1 minus a byte: %s\n", tetrad_last_class());
    free(blob);

    /* int4-rans64-t1 with the default 1 MiB chunks. */
    blob = malloc(tetrad_rans64_bound(n, TETRAD_RANS64_DEFAULT_CHUNK_SHIFT));
    if (tetrad_rans64_encode(src, n, TETRAD_RANS64_DEFAULT_CHUNK_SHIFT, blob,
                             tetrad_rans64_bound(n, TETRAD_RANS64_DEFAULT_CHUNK_SHIFT), &len) != TETRAD_OK)
        return 1;
    if (tetrad_rans64_decoded_len(blob, len, &raw) != TETRAD_OK || raw != n) return 1;
    if (tetrad_rans64_decode(blob, len, back, n) != TETRAD_OK || memcmp(back, src, n)) return 1;
    printf("int4-rans64-t1: %zu -> %zu bytes\n", n, len);

    free(src);
    free(blob);
    free(back);
    puts("ok");
    return 0;
}
