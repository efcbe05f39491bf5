// Pack generator (problems.h): sentence frames per split, own RNG.
#include "collab/problems.h"

#include <array>
#include <cctype>

#include "core/error.h"

namespace hogwild::collab {

namespace {

// The sentence grammar. A part's story is a start sentence, one sentence per operation (an optional
// connector, then a sentence of the operation's list) and a question. The subject is a person
// (named, then "she"/"he" or the name) or a place or group ("A shop ...", then "The shop"/"It").
// Every operation sentence carries its cue: "more" adds, "away" subtracts, "times as many" (or
// "twice as many") multiplies; numbers are digits, or words for small ones ("five more", "three
// times as many"), so the worked equations still write one digit per token.
// Placeholders: {A} the subject introduced ("Mia", "A shop"), {S} the subject in a sentence
// ("Mia"/"She", "The shop"/"It"), {s} the subject inside a sentence ("Mia", "the shop"), {item},
// {n} the operand.
// Each list has a training part and a held-out part: the train and test splits draw from the
// training parts only; test-frames draws its start sentence and question from the held-out parts
// and every other sentence from the held-out or the training parts (half and half), so no
// test-frames story is a training frame.
struct Grammar {
  std::vector<const char*> start, add, sub, mul, connector, question;
};

const Grammar& grammar(bool held_out) {
  static const Grammar train = {
      {"{A} has {n} {item}.", "{A} starts with {n} {item}.", "{A} owns {n} {item}.",
       "At first {s} has {n} {item}.", "{A} keeps {n} {item}.", "{A} collects {n} {item}.",
       "{A} counts {n} {item}.", "There are {n} {item} at first, and they belong to {s}."},
      {"{S} gets {n} more.", "{S} buys {n} more {item}.", "{S} finds {n} more.",
       "{n} more {item} are added.", "{S} earns {n} more {item}.", "{S} receives {n} more.",
       "{n} more arrive.", "{S} picks up {n} more {item}.", "A truck brings {n} more.",
       "Someone puts in {n} more.", "{S} orders {n} more {item}."},
      {"{S} gives {n} away.", "{S} throws {n} of them away.", "{n} are taken away.",
       "Someone takes {n} away.", "{S} sends {n} {item} away.", "{n} {item} are carried away.",
       "{n} of them run away.", "{S} gives {n} {item} away to a friend."},
      {"Then {s} has {n} times as many.", "{S} ends up with {n} times as many.",
       "Soon there are {n} times as many.", "A year later {s} has {n} times as many.",
       "{S} now has {n} times as many {item}."},
      {"", "", "", "", "Then ", "Later, ", "After that, ", "Next, ", "On Monday, "},
      {"How many {item} does {s} have now?", "How many {item} does {s} have at the end?",
       "How many {item} does {s} end up with?", "How many {item} does {s} have?",
       "How many {item} are there now?"}};
  static const Grammar held = {
      {"{A} holds {n} {item}.", "In the morning {s} has {n} {item}.",
       "{A} begins the day with {n} {item}."},
      {"{S} wins {n} more.", "A friend brings {n} more {item}.", "{n} more {item} turn up."},
      {"{S} puts {n} of them away.", "A storm blows {n} away.", "{n} {item} roll away."},
      {"By evening {s} has {n} times as many.", "The number grows to {n} times as many."},
      {"The next day, ", "Soon after, ", "At noon, "},
      {"What is the final number of {item} for {s}?", "How many {item} remain in the end?"}};
  return held_out ? held : train;
}

struct Person {
  const char* name;
  bool she;
};
// Never a worker name of the formatting (Alice, Bob, Carol, Dave, Eve, Frank, Grace, Heidi).
constexpr std::array<Person, 32> kPeople = {
    {{"Mia", true},   {"Leo", false},  {"Nina", true},  {"Omar", false}, {"Lily", true},
     {"Sam", false},  {"Zoe", true},   {"Max", false},  {"Ivy", true},   {"Ben", false},
     {"Rosa", true},  {"Tom", false},  {"Lena", true},  {"Jack", false}, {"Emma", true},
     {"Noah", false}, {"Ruth", true},  {"Paul", false}, {"Kate", true},  {"Hugo", false},
     {"Anna", true},  {"Luis", false}, {"Sara", true},  {"Finn", false}, {"Maya", true},
     {"Eli", false},  {"Jane", true},  {"Adam", false}, {"Lucy", true},  {"Ivan", false},
     {"Tara", true},  {"Owen", false}}};
constexpr std::array<const char*, 12> kPlaces = {"shop",   "farm",  "class",  "library",
                                                 "school", "club",  "bakery", "museum",
                                                 "team",   "hotel", "market", "camp"};
constexpr std::array<const char*, 22> kItems = {
    "apples", "pens",    "books", "stamps",  "marbles", "cards", "shells", "beads",
    "eggs",   "buttons", "rocks", "candles", "cookies", "toys",  "shirts", "plates",
    "coins",  "cups",    "hats",  "sheep",   "hens",    "ducks"};
constexpr std::array<const char*, 9> kWords = {"two",   "three", "four", "five", "six",
                                               "seven", "eight", "nine", "ten"};

void replace_all(std::string& s, std::string_view key, std::string_view value) {
  for (size_t p = s.find(key); p != std::string::npos; p = s.find(key, p + value.size()))
    s.replace(p, key.size(), value);
}

template <typename T>
const T& pick(Rng& rng, const std::vector<T>& v) {
  return v[static_cast<size_t>(rng.uniform(0, static_cast<int64_t>(v.size()) - 1))];
}

Part make_part(Split split, Rng& rng) {
  const bool held = split == Split::test_frames;
  // A slot of the grammar: test-frames mixes its held-out part with the training part.
  auto slot = [&](std::vector<const char*> Grammar::*list, bool always_held) {
    const bool h = held && (always_held || rng.chance(0.5));
    return pick(rng, grammar(h).*list);
  };
  const bool person = rng.chance(0.6);
  const Person& who = kPeople[rng.uniform(0, kPeople.size() - 1)];
  const std::string place = kPlaces[rng.uniform(0, kPlaces.size() - 1)];
  const std::string item = kItems[rng.uniform(0, kItems.size() - 1)];
  const bool words = rng.chance(0.3);  // small numbers as words in this story
  Part p;
  p.start = rng.uniform(5, 99);
  const int n_ops = static_cast<int>(rng.uniform(2, 5));
  int64_t v = p.start;
  bool multiplied = false;
  std::vector<std::string> sentences;
  auto fill = [&](std::string s, int64_t n, bool mul) {
    const std::string big = person ? who.name : "The " + place;
    const std::string small = person ? who.name : "the " + place;
    const std::string pron = person ? (who.she ? "She" : "He") : "It";
    replace_all(s, "{A}", person ? who.name : "A " + place);
    replace_all(s, "{S}", rng.chance(0.5) ? big : pron);
    replace_all(s, "{s}", small);
    replace_all(s, "{item}", item);
    std::string num = std::to_string(n);
    if (words && n >= 2 && n <= 10) num = kWords[n - 2];
    if (mul && words && n == 2) {
      replace_all(s, "{n} times", "twice");
    }
    replace_all(s, "{n}", num);
    if (!s.empty()) s[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(s[0])));
    return s;
  };
  // An operation sentence after its connector (none when the sentence opens with one); the
  // first word is lower-cased unless it is the name.
  auto op_sentence = [&](std::vector<const char*> Grammar::*list, int64_t n, bool mul) {
    const std::string c = slot(&Grammar::connector, false);
    std::string body = fill(slot(list, false), n, mul);
    bool opened = false;
    for (std::string_view o : {"Then ", "Soon ", "A year later ", "By evening ", "The number "})
      opened = opened || body.rfind(o, 0) == 0;
    if (c.empty() || opened) return body;
    if (!(person && body.rfind(who.name, 0) == 0))
      body[0] = static_cast<char>(std::tolower(static_cast<unsigned char>(body[0])));
    return c + body;
  };
  sentences.push_back(fill(slot(&Grammar::start, true), p.start, false));
  while (static_cast<int>(p.ops.size()) < n_ops) {
    const int64_t r = rng.uniform(0, 99);
    Operation op;
    if (r < 25 && !multiplied && v <= 99) {
      op = {'*', rng.uniform(2, 9)};
      multiplied = true;
      v *= op.operand;
      sentences.push_back(op_sentence(&Grammar::mul, op.operand, true));
    } else if (r < 60 && v >= 4) {
      op = {'-', rng.uniform(2, std::min<int64_t>(v - 2, 99))};
      v -= op.operand;
      sentences.push_back(op_sentence(&Grammar::sub, op.operand, false));
    } else if (v + 99 <= 9999) {
      op = {'+', rng.uniform(2, 99)};
      v += op.operand;
      sentences.push_back(op_sentence(&Grammar::add, op.operand, false));
    } else {
      continue;  // (unreachable with these ranges) draw again
    }
    p.ops.push_back(op);
  }
  p.result = v;
  sentences.push_back(fill(slot(&Grammar::question, true), 0, false));
  for (size_t i = 0; i < sentences.size(); ++i) p.text += (i ? " " : "") + sentences[i];
  return p;
}

// The first model's wording (Wording::first): six training frames, three held out.
// A sentence frame: how one story states its start value, each operation and its question.
// Placeholders: {name} {Pron} (capitalised pronoun) {pron} {item} {n}.
struct Frame {
  const char* start;
  std::vector<const char*> add, sub, mul;
  const char* question;
  bool person;       // uses a named person ({name}, {Pron}, {pron})
  const char* item;  // fixed item noun, or nullptr for a random one of kFirstItems / kFirstAnimals
  bool animals;      // items from kFirstAnimals
};

const std::vector<Frame>& first_frames(Split s) {
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

constexpr std::array<Person, 20> kFirstPeople = {
    {{"Mia", true},   {"Leo", false}, {"Nina", true},  {"Omar", false}, {"Lily", true},
     {"Sam", false},  {"Zoe", true},  {"Max", false},  {"Ivy", true},   {"Ben", false},
     {"Rosa", true},  {"Tom", false}, {"Lena", true},  {"Jack", false}, {"Emma", true},
     {"Noah", false}, {"Ruth", true}, {"Paul", false}, {"Kate", true},  {"Hugo", false}}};
constexpr std::array<const char*, 16> kFirstItems = {
    "apples", "pens",    "books", "stamps",  "marbles", "cards", "shells", "beads",
    "eggs",   "buttons", "rocks", "candles", "cookies", "toys",  "shirts", "plates"};
constexpr std::array<const char*, 6> kFirstAnimals = {"sheep", "goats", "cows",
                                                      "hens",  "ducks", "pigs"};

Part make_part_first(Split split, Rng& rng) {
  const auto& fs = first_frames(split);
  const Frame& f = pick(rng, fs);
  const Person& who = kFirstPeople[rng.uniform(0, kFirstPeople.size() - 1)];
  std::string item = f.item      ? f.item
                     : f.animals ? kFirstAnimals[rng.uniform(0, kFirstAnimals.size() - 1)]
                                 : kFirstItems[rng.uniform(0, kFirstItems.size() - 1)];
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

std::string_view task_name(Task t) { return t == Task::packs ? "packs" : "countdown"; }

Task parse_task(std::string_view name) {
  if (name == "packs") return Task::packs;
  if (name == "countdown") return Task::countdown;
  fail("unknown task '{}'; the supported tasks are packs and countdown", name);
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

Pack make_pack(Split split, int k, uint64_t seed, Wording wording) {
  if (k < 1 || k > 9) fail("a pack has 1..9 parts, got {}", k);
  // Separate seed spaces per split and per k: a held-out split never shares a stream with train.
  const uint64_t tag = split == Split::train  ? 0x5a5a5a5aull
                       : split == Split::test ? 0x3c3c3c3c00000000ull
                                              : 0xa5a5a5a5ull;
  Rng rng(seed * 0x100000001b3ull + tag + static_cast<uint64_t>(k) * 0x9e37ull);
  Pack pack;
  for (int i = 0; i < k; ++i) {
    pack.parts.push_back(wording == Wording::first ? make_part_first(split, rng)
                                                   : make_part(split, rng));
    pack.total += pack.parts.back().result;
    pack.text += fmt::format("Part {}: {}\n", i + 1, pack.parts.back().text);
  }
  pack.text += kPackQuestion;
  return pack;
}

}  // namespace hogwild::collab
