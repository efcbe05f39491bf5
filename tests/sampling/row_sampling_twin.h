// The host twin of device sampling for tests: sampling/row_draw.h draw_row with one banned set.
#pragma once

#include <cstdint>
#include <vector>

#include "kv/backend.h"
#include "sampling/row_draw.h"

namespace hogwild::test {

/// The token RowSampling `r` draws from one logits row (vocab_size), or -1 when none can be drawn.
inline int32_t host_row_draw(const std::vector<float>& l, const RowSampling& r,
                             const std::vector<int32_t>& banned) {
  return draw_row(l, r, banned);
}

}  // namespace hogwild::test
