// Pack generator (problems.h): sentence frames per split, own RNG.
#include "collab/problems.h"

#include <array>

#include "core/error.h"

namespace hogwild::collab {

namespace {

// A sentence frame: how one story states its start value, each operation and its question.
// Placeholders: {name} {Pron} (capitalised pronoun) {pron} {item} {n}.
struct Frame {
  const char* start;
  std::vector<const char*> add, sub, mul;
  const char* question;
  bool person;       // uses a named person ({name}, {Pron}, {pron})
  const char* item;  // fixed item noun, or nullptr for a random one of kItems / kAnimals
  bool animals;      // items from kAnimals
};

const std::vector<Frame>& frames(Split s) {
  static const std::vector<Frame> train = {
      {"{name} has {n} {item}.",
       {"{Pron} gets {n} more.", "{Pron} buys {n} more {item}."},
       {"{Pron} gives {n} away.", "{Pron} throws {n} of them away."},
       {"Then {pron} has {n} times as many."},
       "How many {item} does {name} have now?",
       true,
       nullptr,
       false},
      {"A box holds {n} {item}.",
       {"Someone puts in {n} more.", "{n} more {item} are added."},
       {"{n} are taken away.", "Someone takes {n} away."},
       {"The box then holds {n} times as many."},
       "How many {item} are in the box?",
       false,
       nullptr,
       false},
      {"A shop has {n} {item}.",
       {"It orders {n} more.", "A truck brings {n} more."},
       {"Customers carry {n} away.", "It sends {n} away."},
       {"Its stock grows to {n} times as many."},
       "How many {item} does the shop have?",
       false,
       nullptr,
       false},
      {"A farm has {n} {item}.",
       {"{n} more are born.", "The farmer buys {n} more."},
       {"{n} run away.", "The farmer gives {n} away."},
       {"A year later there are {n} times as many."},
       "How many {item} are on the farm?",
       false,
       nullptr,
       true},
      {"A class collects {n} {item}.",
       {"The next day they collect {n} more.", "A teacher brings {n} more."},
       {"They give {n} away.", "They send {n} away to a school."},
       {"By Friday they have {n} times as many."},
       "How many {item} does the class have?",
       false,
       nullptr,
       false},
      {"{name} saves {n} coins.",
       {"{Pron} earns {n} more.", "{Pron} finds {n} more coins."},
       {"{Pron} gives {n} coins away."},
       {"After a year {pron} has {n} times as many."},
       "How many coins does {name} have?",
       true,
       "coins",
       false},
  };
  static const std::vector<Frame> test = {
      {"{name} starts with {n} {item}.",
       {"Later {pron} finds {n} more.", "Then {pron} wins {n} more {item}."},
       {"{Pron} puts {n} of them away.", "A friend takes {n} away."},
       {"By evening {pron} has {n} times as many."},
       "How many {item} does {name} end with?",
       true,
       nullptr,
       false},
      {"A basket contains {n} {item}.",
       {"A child drops in {n} more.", "{n} more {item} go in."},
       {"A bird carries {n} away.", "{n} are given away."},
       {"Soon the basket has {n} times as many."},
       "How many {item} are in the basket at the end?",
       false,
       nullptr,
       false},
      {"A library owns {n} books.",
       {"It gets {n} more as gifts."},
       {"It gives {n} away to a fair."},
       {"Years later it owns {n} times as many."},
       "How many books does the library own?",
       false,
       "books",
       false},
  };
  return s == Split::test_frames ? test : train;
}

struct Person {
  const char* name;
  bool she;
};
// Never a worker name of the formatting (Alice, Bob, Carol, Dave, Eve, Frank, Grace, Heidi).
constexpr std::array<Person, 20> kPeople = {
    {{"Mia", true},   {"Leo", false}, {"Nina", true},  {"Omar", false}, {"Lily", true},
     {"Sam", false},  {"Zoe", true},  {"Max", false},  {"Ivy", true},   {"Ben", false},
     {"Rosa", true},  {"Tom", false}, {"Lena", true},  {"Jack", false}, {"Emma", true},
     {"Noah", false}, {"Ruth", true}, {"Paul", false}, {"Kate", true},  {"Hugo", false}}};
constexpr std::array<const char*, 16> kItems = {
    "apples", "pens",    "books", "stamps",  "marbles", "cards", "shells", "beads",
    "eggs",   "buttons", "rocks", "candles", "cookies", "toys",  "shirts", "plates"};
constexpr std::array<const char*, 6> kAnimals = {"sheep", "goats", "cows", "hens", "ducks", "pigs"};

void replace_all(std::string& s, std::string_view key, std::string_view value) {
  for (size_t p = s.find(key); p != std::string::npos; p = s.find(key, p + value.size()))
    s.replace(p, key.size(), value);
}

template <typename T>
const T& pick(Rng& rng, const std::vector<T>& v) {
  return v[static_cast<size_t>(rng.uniform(0, static_cast<int64_t>(v.size()) - 1))];
}

Part make_part(Split split, Rng& rng) {
  const auto& fs = frames(split);
  const Frame& f = pick(rng, fs);
  const Person& who = kPeople[rng.uniform(0, kPeople.size() - 1)];
  std::string item = f.item      ? f.item
                     : f.animals ? kAnimals[rng.uniform(0, kAnimals.size() - 1)]
                                 : kItems[rng.uniform(0, kItems.size() - 1)];
  Part p;
  p.start = rng.uniform(5, 99);
  const int n_ops = static_cast<int>(rng.uniform(2, 5));
  int64_t v = p.start;
  bool multiplied = false;
  std::vector<std::string> sentences;
  auto fill = [&](const char* tmpl, int64_t n) {
    std::string s = tmpl;
    replace_all(s, "{name}", who.name);
    replace_all(s, "{Pron}", who.she ? "She" : "He");
    replace_all(s, "{pron}", who.she ? "she" : "he");
    replace_all(s, "{item}", item);
    replace_all(s, "{n}", std::to_string(n));
    return s;
  };
  sentences.push_back(fill(f.start, p.start));
  while (static_cast<int>(p.ops.size()) < n_ops) {
    const int64_t r = rng.uniform(0, 99);
    Operation op;
    if (r < 25 && !multiplied && v <= 99) {
      op = {'*', rng.uniform(2, 9)};
      multiplied = true;
      v *= op.operand;
      sentences.push_back(fill(pick(rng, f.mul), op.operand));
    } else if (r < 60 && v >= 4) {
      op = {'-', rng.uniform(2, std::min<int64_t>(v - 2, 99))};
      v -= op.operand;
      sentences.push_back(fill(pick(rng, f.sub), op.operand));
    } else if (v + 99 <= 9999) {
      op = {'+', rng.uniform(2, 99)};
      v += op.operand;
      sentences.push_back(fill(pick(rng, f.add), op.operand));
    } else {
      continue;  // (unreachable with these ranges) draw again
    }
    p.ops.push_back(op);
  }
  p.result = v;
  sentences.push_back(fill(f.question, 0));
  for (size_t i = 0; i < sentences.size(); ++i) p.text += (i ? " " : "") + sentences[i];
  return p;
}

}  // namespace

std::string_view split_name(Split s) {
  return s == Split::train ? "train" : s == Split::test ? "test" : "test-frames";
}

Split parse_split(std::string_view name) {
  if (name == "train") return Split::train;
  if (name == "test") return Split::test;
  if (name == "test-frames") return Split::test_frames;
  fail("unknown split '{}'; use train, test or test-frames", name);
}

uint64_t Rng::next() {
  uint64_t z = (s_ += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

int64_t Rng::uniform(int64_t lo, int64_t hi) {
  HOGWILD_CHECK(hi >= lo);
  return lo + static_cast<int64_t>(next() % static_cast<uint64_t>(hi - lo + 1));
}

bool Rng::chance(double p) { return static_cast<double>(next() >> 11) * 0x1.0p-53 < p; }

std::string Part::equations() const {
  std::string s;
  int64_t v = start;
  for (const Operation& op : ops) {
    const int64_t next = op.op == '+'   ? v + op.operand
                         : op.op == '-' ? v - op.operand
                                        : v * op.operand;
    s += fmt::format("{}{} {} {} = {}.", s.empty() ? "" : " ", v, op.op, op.operand, next);
    v = next;
  }
  return s;
}

Pack make_pack(Split split, int k, uint64_t seed) {
  if (k < 1 || k > 9) fail("a pack has 1..9 parts, got {}", k);
  // Separate seed spaces per split and per k: a held-out split never shares a stream with train.
  const uint64_t tag = split == Split::train  ? 0x5a5a5a5aull
                       : split == Split::test ? 0x3c3c3c3c00000000ull
                                              : 0xa5a5a5a5ull;
  Rng rng(seed * 0x100000001b3ull + tag + static_cast<uint64_t>(k) * 0x9e37ull);
  Pack pack;
  for (int i = 0; i < k; ++i) {
    pack.parts.push_back(make_part(split, rng));
    pack.total += pack.parts.back().result;
    pack.text += fmt::format("Part {}: {}\n", i + 1, pack.parts.back().text);
  }
  pack.text += kPackQuestion;
  return pack;
}

}  // namespace hogwild::collab
