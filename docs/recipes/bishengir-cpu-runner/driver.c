/* Host-side C driver: calls the HOST entry `host(x, y, o)` (three memref<1000xf32>,
   expanded memref ABI: allocated, aligned, offset, size, stride) and checks o = x + y. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>
#define N 1000
extern void host(float*, float*, int64_t, int64_t, int64_t,
                 float*, float*, int64_t, int64_t, int64_t,
                 float*, float*, int64_t, int64_t, int64_t);
int main(void) {
  float *x = malloc(N * 4), *y = malloc(N * 4), *o = malloc((N + 64) * 4);
  for (int i = 0; i < N; i++) { x[i] = 0.5f * i; y[i] = 1000.0f - 0.25f * i; }
  for (int i = 0; i < N + 64; i++) o[i] = -7.0f;    /* sentinel, incl. 64 guard elements past the end */
  host(x, x, 0, N, 1, y, y, 0, N, 1, o, o, 0, N, 1);
  int bad = 0; double s = 0;
  for (int i = 0; i < N; i++) { s += o[i]; if (o[i] != x[i] + y[i]) { if (bad < 5) printf("mismatch o[%d]=%g expected %g\n", i, o[i], x[i] + y[i]); bad++; } }
  int guard = 0; for (int i = N; i < N + 64; i++) if (o[i] != -7.0f) guard++;
  printf("sum=%.1f expected=%.1f mismatches=%d guard_overwritten=%d\n", s, 1000.0 * 1000 + 0.25 * (N * (N - 1) / 2.0), bad, guard);
  return bad || guard;
}
