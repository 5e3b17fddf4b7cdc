// Links the installed library and calls it without a device: the version, and an argument check.
#include <attn_tune/attn_tune.hpp>

#include <cstdio>
#include <cstring>

int main() {
  if (attn_tune_api_version() != ATTN_TUNE_API_VERSION) return 1;
  attn_tune::problem p = attn_tune::make_problem(1, 8, 8, 128, 128, 64);
  const attn_tune_status s = attn_tune_check(nullptr, nullptr, nullptr, nullptr, nullptr, &p);
  if (s != ATTN_TUNE_ERROR_INVALID_ARGUMENT || std::strcmp(attn_tune_last_error(), "q is NULL") != 0) return 2;
  std::printf("attn_tune %s, API %d\n", attn_tune_version_string(), attn_tune_api_version());
  return 0;
}
