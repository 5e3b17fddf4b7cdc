#pragma once
// The device's copy bandwidth, measured once per run, so that each variant's GB/s can be read as
// a fraction of what the memory can do (record::copy_fraction).
#include <cstdint>

#include "backend/runtime.hpp"
#include "core/rates.hpp"

namespace attn {

/// The size of the copy: 1 GiB, far past any L2, so the copy runs from and to HBM.
constexpr int64_t copy_bandwidth_bytes = int64_t(1) << 30;

/// One untimed copy of `bytes` device to device, then `reps` timed with events; the bandwidth is
/// 2 * bytes (read plus write) over the median time. Never throws: when memory for the two
/// buffers is short or a call fails, gbps is 0 and note says why.
copy_bandwidth measure_copy_bandwidth(const device_runtime& rt,
                                      int64_t bytes = copy_bandwidth_bytes, int reps = 5);

}  // namespace attn
