// Packs of small arithmetic word problems for the collaboration model (tools/collab/README.md):
// K = 2..8 independent parts, each a short story with 2..5 operations on whole numbers (+, -, *),
// and the question "what is the sum of the answers". Every part can be worked in parallel; the
// total needs all of them, so the pack rewards splitting the work.
//
// Numbers stay small enough to compute one digit at a time in the text: start values 5..99,
// additions and subtractions of 2..99, at most one multiplication per part, by 2..9, of a value
// <= 99; every intermediate value is in 0..9999.
//
// The stories come from a sentence grammar (problems.cpp: start sentences, operations, connectors,
// questions, names, places, objects, small numbers as words) with a held-out part.
// Held-out problems, two splits:
//   test         the training part of the grammar, a separate seed space: no training example
//                contains these packs;
//   test-frames  every story starts and asks with held-out sentences, the rest half held-out (the
//                operation cue words "more", "away", "times as many" are shared, so the task is the
//                same), also in their own seed space: generalisation to new wording.
// Wording::first gives the first model's six frames (the figures of docs/COLLAB.md).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace hogwild::collab {

enum class Split { train, test, test_frames };

/// The tasks of the collaboration model: packs of word problems (this file) and Countdown
/// (countdown.h).
enum class Task { packs, countdown };

/// "packs" / "countdown"; parse_task throws hogwild::Error naming the supported tasks for any
/// other name.
std::string_view task_name(Task t);
Task parse_task(std::string_view name);

/// "train" / "test" / "test-frames"; parse_split throws hogwild::Error for any other name.
std::string_view split_name(Split s);
Split parse_split(std::string_view name);

/// One operation of a part: value = value op operand.
struct Operation {
  char op = '+';  // '+', '-' or '*'
  int64_t operand = 0;
};

struct Part {
  int64_t start = 0;
  std::vector<Operation> ops;  // 2..5
  int64_t result = 0;
  std::string text;  // the story, e.g. "Mia has 23 pens. She gets 14 more. How many ..."

  /// The worked equations, one per operation: "23 + 14 = 37. 37 - 5 = 32." (no leading space).
  std::string equations() const;
};

/// A pack: the problem text given to the workers and its exact answer.
struct Pack {
  std::vector<Part> parts;  // K
  int64_t total = 0;        // sum of the parts' results
  std::string text;  // "Part 1: ...\nPart 2: ...\nWhat is the sum of the answers to all parts?"
};

/// The wording of the stories: the sentence grammar (default), or the six frames of the first model
/// (models/packs-collab was trained and measured on them; its tests use them).
enum class Wording { grammar, first };

/// The pack for (split, k, seed): deterministic on every platform (own integer RNG, no
/// <random> distributions). Throws hogwild::Error unless 1 <= k <= 9.
Pack make_pack(Split split, int k, uint64_t seed, Wording wording = Wording::grammar);

/// The last line of every pack's text.
inline constexpr std::string_view kPackQuestion = "What is the sum of the answers to all parts?";

/// Small deterministic RNG (splitmix64) shared by the generators of this area.
class Rng {
 public:
  explicit Rng(uint64_t seed) : s_(seed) {}
  uint64_t next();
  /// Uniform integer in [lo, hi] (hi >= lo).
  int64_t uniform(int64_t lo, int64_t hi);
  /// true with probability p.
  bool chance(double p);

 private:
  uint64_t s_;
};

}  // namespace hogwild::collab
