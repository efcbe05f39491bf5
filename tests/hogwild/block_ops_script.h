// One fixed sequence of cache-block operations and forwards, run on any Backend, recording what
// the backend answered (ids, lengths, errors, logits, promoted keys). tests/hogwild/test_block_ops
// checks the CPU backend's record against hand-computed values; tests/cuda compares the CUDA
// backend's record with the CPU's: one block table, one plan, the same answers.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "core/error.h"
#include "kv/backend.h"

namespace hogwild::testing {

struct BlockOpsRecord {
  std::vector<BlockId> ids;         // every new_block result, in order
  std::vector<int64_t> lens;        // block lengths checked after each step
  std::vector<std::string> errors;  // message of each operation expected to throw ("" if not)
  std::vector<std::vector<float>> logits;     // every forward's logits
  std::vector<float> promoted_k, promoted_v;  // layer 0 of the history after the promotions
  int64_t live_end = -1;
};

/// The sequence (vocab >= 64, any model): a prompt block of 9 tokens; two step blocks written by
/// two writers in one forward (3 + 2 tokens, one of them re-fed later); promotion of one step
/// into the prompt block; truncation; free and id reuse; then each bad operation once.
inline BlockOpsRecord run_block_ops(Backend& be) {
  BlockOpsRecord r;
  auto err = [&](const std::function<void()>& f) {
    try {
      f();
      r.errors.push_back("");
    } catch (const Error& e) {
      r.errors.push_back(e.what());
    }
  };
  std::vector<float> logits;
  const BlockId h = be.new_block(), a = be.new_block(), b = be.new_block();
  r.ids.insert(r.ids.end(), {h, a, b});
  ForwardBatch p;
  p.views = {{h}};
  for (int i = 0; i < 9; ++i) p.tokens.push_back({3 + 5 * i, 0, h, i == 8});
  be.forward(p, logits);
  r.logits.push_back(logits);
  ForwardBatch s;
  s.views = {{h, b, a}, {h, a, b}};  // each writer reads the other's block before its own
  s.tokens = {
      {11, 0, a, false}, {12, 0, a, false}, {13, 0, a, true}, {21, 1, b, false}, {22, 1, b, true}};
  be.forward(s, logits);
  r.logits.push_back(logits);
  r.lens.insert(r.lens.end(), {be.block_len(h), be.block_len(a), be.block_len(b)});
  be.append_block(h, a);  // promotion: a's keys rotated by 9
  r.lens.push_back(be.block_len(h));
  be.read_block(h, 0, r.promoted_k, r.promoted_v);
  ForwardBatch d;
  d.views = {{h, b}};
  d.tokens = {{30, 0, b, true}};
  be.forward(d, logits);
  r.logits.push_back(logits);
  r.lens.push_back(be.block_len(b));
  be.truncate_block(b, 1);
  r.lens.push_back(be.block_len(b));
  be.free_block(a);
  const BlockId c = be.new_block();  // the lowest free id: a's
  r.ids.push_back(c);
  // Bad operations: nothing changes, each refused with its message.
  err([&] { be.append_block(h, h); });
  err([&] { be.append_block(h, 77); });
  err([&] { be.block_len(-1); });
  err([&] { be.truncate_block(b, 5); });
  err([&] {
    ForwardBatch x;
    x.views = {{h}};
    x.tokens = {{1, 0, b, true}};  // target not in the writer's view
    be.forward(x, logits);
  });
  err([&] {
    ForwardBatch x;
    x.views = {{h, b}};
    x.tokens = {{1, 1, b, true}};  // writer without a view
    be.forward(x, logits);
  });
  err([&] {
    ForwardBatch x;
    x.views = {{h, 99}};
    x.tokens = {{1, 0, h, true}};  // a view naming a block that does not exist
    be.forward(x, logits);
  });
  err([&] {
    ForwardBatch x;
    x.views = {{c}};
    x.tokens = {{-3, 0, c, true}};  // token id outside the vocabulary
    be.forward(x, logits);
  });
  r.lens.insert(r.lens.end(), {be.block_len(h), be.block_len(b), be.block_len(c)});
  be.free_block(h);
  be.free_block(b);
  be.free_block(c);
  r.live_end = be.live_blocks();
  return r;
}

}  // namespace hogwild::testing
