// Backend defaults (backend.h).
#include "model/backend.h"

#include "core/error.h"

namespace hogwild {

void Backend::forward_sample(const ForwardBatch&, const std::vector<int32_t>&,
                             const std::vector<RowSampling>&, std::vector<int32_t>&) {
  fail("this backend does not sample on the device; call forward and sample the logits on the host");
}

}  // namespace hogwild
