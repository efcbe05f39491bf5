// Cache layouts (docs/ARCHITECTURE.md §3; paper §3.2): a pure function from the session's block
// state to every worker's view (ordered block occurrences handed to Backend::forward).
//
// Blocks of a session (all created by the Session, see session.h):
//   history      the prompt, then every finished step in finishing order (combined, interleaved);
//                the prompt only (contiguous, independent: nothing is ever promoted; a
//                Skeleton-of-Thought session promotes its outline, then its expansions, session.h).
//   closing      steps whose last token is fed in *this* forward. They already read as the tail of
//                the history (finishing order) and are appended to `history` by
//                Backend::append_block right after the forward (see session_decode.cpp).
//                Semantics: a step belongs to the shared history from the forward that feeds its
//                last token on.
//   current[w]   worker w's current (unfinished) step; contiguous, independent: w's whole output;
//                -1 (skipped) for a worker without a block (Skeleton-of-Thought: not started yet,
//                or its expansion joined the history).
//   constants    formatting text blocks, tokenized once and computed once (ConstBlocks).
//
// Views, for worker w and the other workers o_1 < ... < o_k (fixed worker-index order), k >= 1:
//   combined     [history][closing...][others_header[w]][cur o_1][sep] ... [cur o_k]
//                [sep_own_header[w]][cur w]
//   interleaved  [history][closing...][cur w]
//   contiguous   [history][others_header[w]][cur o_1][sep] ... [cur o_k][sep_own_header[w]][cur w]
//   independent  [history][closing...][cur w]: no other worker, no constant block; the workers
//                are independent samples that share the prompt's KV (self-consistency). Only a
//                Skeleton-of-Thought session has closing blocks here (session.h).
// (formatting.h LayoutTexts: sep = other_separator, sep_own_header = other_separator + own_header;
// the headers name the viewing worker, so they are per worker; equal texts share one block.)
// With one worker (k = 0) every layout is [history][closing...][cur w]: plain reasoning.
// contiguous keeps the combined layout's headers and separators so that the two differ only in
// step-level synchronisation (the paper's ablation); it has no closing blocks.
#pragma once

#include <string>
#include <vector>

#include "kv/backend.h"

namespace hogwild {

enum class Layout { combined, interleaved, contiguous, independent };

/// Most workers of an independent-layout session (its workers need no names of their own).
inline constexpr int kMaxIndependentWorkers = 64;

/// "combined" / "interleaved" / "contiguous" / "independent".
const char* layout_name(Layout l);
/// Parses a layout name; throws hogwild::Error listing the valid names.
Layout parse_layout(const std::string& name);

/// Constant formatting blocks (docs/ARCHITECTURE.md §3). Each is tokenized once and its K/V is
/// computed once, in the prefill forward, by a pseudo-writer whose view is [history][that block],
/// i.e. as if the text followed the prompt directly. Workers read them at whatever offset their
/// view gives them (keys are position-free in a block, docs/ARCHITECTURE.md §2). Empty ids (-1) are
/// skipped in views.
struct ConstBlocks {
  std::vector<BlockId> others_header;   // (n_workers) header before the others' current steps
  BlockId sep = -1;                     // other_separator: after an other worker's unfinished step
  std::vector<BlockId> sep_own_header;  // (n_workers) other_separator + own_header of worker w
};

/// Session block state from which views are built.
struct LayoutState {
  Layout layout = Layout::combined;
  BlockId history = -1;
  std::vector<BlockId> closing;  // finishing order; must be empty for contiguous
  std::vector<BlockId> current;  // (n_workers) current step block of each worker
  ConstBlocks text;
};

/// Every worker's view: result[w] = ordered block ids. Pure. Throws hogwild::Error when the state
/// is inconsistent (no workers, no history block, others_header / sep_own_header not sized
/// n_workers when there are other workers, closing blocks in the contiguous layout).
std::vector<std::vector<BlockId>> build_views(const LayoutState& s);

/// The finisher's view (docs/ARCHITECTURE.md §4):
///   [history][closing...][cur w_0][sep]...[cur w_n-1][sep][suffix]
/// the linearised text of the whole run plus the "time is up" suffix block. `sep` may be -1 (no
/// separator between unfinished steps); workers without a block are skipped. worker >= 0 (the
/// independent layout's per-worker finisher): [history][closing...][cur worker][sep][suffix], that
/// worker's own text only. Throws hogwild::Error for a worker out of range.
std::vector<BlockId> finisher_view(const LayoutState& s, BlockId suffix, int worker = -1);

}  // namespace hogwild
