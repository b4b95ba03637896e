/* Codec throughput: encode and decode of each sample record, single thread.
 * Usage: bench_codec [iterations]   (default 20000 per sample) */
#include <stdio.h>
#include <stdlib.h>

#include "codec_samples.h"
#include "ksnap/ksnap.h"
#include "base/util.h"

int main(int argc, char **argv) {
  long iterations = argc > 1 ? atol(argv[1]) : 20000;
  ksnap_error_t err;
  ksnap_buf_t buf;

  ksnap_buf_init(&buf);
  printf("%-16s %8s %12s %12s\n", "record", "bytes", "encode ns", "decode ns");
  for (size_t s = 0; s < ksnap_test_codec_sample_cnt; s++) {
    const ksnap_test_codec_sample_t *sample = &ksnap_test_codec_samples[s];
    int64_t t0, t1, t2;

    t0 = ksnap__now_us();
    for (long i = 0; i < iterations; i++)
      if (sample->encode(&buf, &err))
        return fprintf(stderr, "%s: %s\n", sample->name, err.msg), 1;
    t1 = ksnap__now_us();
    for (long i = 0; i < iterations; i++)
      if (sample->decode(buf.data, buf.len, &err))
        return fprintf(stderr, "%s: %s\n", sample->name, err.msg), 1;
    t2 = ksnap__now_us();
    printf("%-16s %8zu %12.0f %12.0f\n", sample->name, buf.len,
           (double)(t1 - t0) * 1000 / (double)iterations,
           (double)(t2 - t1) * 1000 / (double)iterations);
  }
  ksnap_buf_cleanup(&buf);
  return 0;
}
