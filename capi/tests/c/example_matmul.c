/* Multiply with one weight of a checkpoint: example_matmul DIR NAME O I */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tetrad.h"

static int fail(const char *what) {
    char msg[512];
    tetrad_last_message(msg, sizeof msg);
    fprintf(stderr, "%s refused: %s (%s)\n", what, tetrad_last_class(), msg);
    return 1;
}

int main(int argc, char **argv) {
    tetrad_container *c = NULL;
    tetrad_tensor *w = NULL;
    uint64_t o, i;
    size_t s = 2, k;
    float *x, *y;

    if (argc != 5) return 2;
    o = strtoull(argv[3], NULL, 10);
    i = strtoull(argv[4], NULL, 10);
    if (tetrad_container_open(argv[1], strlen(argv[1]), &c) != TETRAD_OK) return fail("open");
    if (tetrad_tensor_prepare(c, argv[2], strlen(argv[2]), o, i, &w) != TETRAD_OK) return fail("prepare");
    tetrad_container_free(c); /* the tensor keeps what it needs */

    x = malloc(s * i * sizeof *x);
    y = malloc(s * o * sizeof *y);
    for (k = 0; k < s * i; k++) x[k] = (float)(k % 7) - 3.0f;
    /* y (S x O) = x (S x I) * W^T, on 2 threads */
    if (tetrad_tensor_matmul_f32(w, x, s * i, s, y, s * o, 2) != TETRAD_OK) return fail("matmul");
    printf("%s is %s; y[0] = %g\n", argv[2], tetrad_tensor_format(w), y[0]);
    /* the same with int8-quantized activations (exact integer dot products) */
    if (tetrad_tensor_matmul_q8(w, x, s * i, s, y, s * o, 1) != TETRAD_OK) return fail("matmul_q8");

    tetrad_tensor_free(w);
    free(x);
    free(y);
    puts("ok");
    return 0;
}
