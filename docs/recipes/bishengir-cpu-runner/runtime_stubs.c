/* Minimal CPU definitions of the symbols BiShengIR's CPU-runner output references.
   getData/printData/file handles belong to the generated random-input `main`
   (unused here: our driver.c calls `host` directly). memrefCopy is MLIR's C runner-utils entry. */
#include <stdint.h>
#include <string.h>
#include <stdio.h>
#include <stdlib.h>
typedef struct { int64_t rank; void *descriptor; } UnrankedMemRef;
void *getFileHandle(void *p) { (void)p; return NULL; }
void closeFileHandle(void *p) { (void)p; }
void _mlir_ciface_getDataF32(UnrankedMemRef *m) { (void)m; }
void _mlir_ciface_printDataF32(void *f, UnrankedMemRef *m) { (void)f; (void)m; }
/* descriptor: {char* alloc; char* aligned; int64 offset; int64 sizes[rank]; int64 strides[rank]} */
static void copy_rec(int64_t es, int64_t rank, int64_t d, char *s, const int64_t *sz, const int64_t *ss,
                     char *t, const int64_t *ts) {
  if (d == rank) { memcpy(t, s, es); return; }
  for (int64_t i = 0; i < sz[d]; i++)
    copy_rec(es, rank, d + 1, s + i * ss[d] * es, sz, ss, t + i * ts[d] * es, ts);
}
void memrefCopy(int64_t es, UnrankedMemRef *src, UnrankedMemRef *dst) {
  int64_t r = src->rank;
  char **sd = (char **)src->descriptor, **dd = (char **)dst->descriptor;
  int64_t *sm = (int64_t *)(sd + 2), *dm = (int64_t *)(dd + 2);
  copy_rec(es, r, 0, sd[1] + sm[0] * es, sm + 1, sm + 1 + r, dd[1] + dm[0] * es, dm + 1 + r);
}
/* Block index for the device kernel on the CPU (set by the host wrapper before each call). */
static int64_t cpu_block_idx;
void cpu_set_block_idx(int64_t p) { cpu_block_idx = p; }
int64_t cpu_get_block_idx(void) { return cpu_block_idx; }
