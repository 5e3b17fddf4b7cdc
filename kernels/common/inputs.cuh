#pragma once
// What the checking inputs look like (--inputs): each element of Q, K or V is a standard-normal
// draw turned into the tensor's distribution here. Shared verbatim by the host (src/verify/
// input_kind.cpp chooses the numbers, its tests check what they do to the scores) and the support
// module (reference.cuh fills the tensors with it): plain C++, so g++, NVRTC and hiprtc all
// accept it.
#if defined(__CUDACC__) || defined(__HIPCC__)
#define ATTN_HOST_DEVICE __host__ __device__
#else
#define ATTN_HOST_DEVICE
#endif

namespace attn_k {

enum : int { max_sink_rows = 3 };

/// One tensor's distribution. Element i lies in sequence row (i / row_elements) % rows; its value
/// is normal * scale * (1 + ramp * row / (rows - 1)) + offset, except in a sink row, where every
/// element is that row's sink value.
struct input_fill {
  float scale;
  float ramp;    ///< the spread grows linearly along the sequence, to (1 + ramp) times at the end
  float offset;  ///< shared by every element: a direction all rows have in common
  long long row_elements;  ///< elements from one sequence row to the next: D (bhsd) or heads * D (bshd)
  int rows;                ///< the sequence length
  int sinks;               ///< how many of sink_row are used
  int sink_row[max_sink_rows];
  float sink_value[max_sink_rows];
};

ATTN_HOST_DEVICE inline float input_value(const input_fill& f, long long i, float normal) {
  const int row = static_cast<int>((i / f.row_elements) % f.rows);
  for (int s = 0; s < f.sinks; ++s)
    if (row == f.sink_row[s]) return f.sink_value[s];
  const float along = f.rows > 1 ? static_cast<float>(row) / static_cast<float>(f.rows - 1) : 0.f;
  return normal * f.scale * (1.f + f.ramp * along) + f.offset;
}

}  // namespace attn_k
