// Programmatic dependent launch switch (pdl.h).
#include <atomic>

#include "cuda/pdl.h"

namespace hogwild::cuda {
namespace {
std::atomic<bool> g_programmatic_launch{true};
}

void set_programmatic_launch(bool on) { g_programmatic_launch.store(on); }
bool programmatic_launch() { return g_programmatic_launch.load(); }

}  // namespace hogwild::cuda
