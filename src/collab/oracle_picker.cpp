// OraclePicker (oracle_picker.h): scripted workers and the examples they leave.
#include "collab/oracle_picker.h"

#include <algorithm>

#include "core/error.h"

namespace hogwild::collab {

OraclePicker::OraclePicker(const StepPolicy& oracle, const TextCodec& codec, int n_workers,
                           Layout layout, PickerOptions options)
    : oracle_(oracle),
      codec_(codec),
      n_workers_(n_workers),
      layout_(layout),
      opt_(options),
      rng_(options.seed),
      snap_(n_workers),
      workers_(n_workers) {}

void OraclePicker::attach(const Session* s) {
  session_ = s;
  const std::vector<int32_t> eos = codec_.eos_ids();
  if (eos.empty()) fail("the codec has no EOS token; the scripted workers stop with it");
  if (eos[0] < 0 || static_cast<size_t>(eos[0]) >= s->forbidden().size() || s->forbidden()[eos[0]])
    fail(
        "EOS token {} is forbidden by the formatting (forbidden.texts); the scripted workers "
        "stop with it",
        eos[0]);
}

void OraclePicker::on_step_start(int w, int, const std::string&, bool check) {
  Worker& ws = workers_.at(w);
  ws.need_plan = true;
  ws.check = check;
  ws.pieces.clear();
  ws.tokens.clear();
  ws.segment.clear();
  ws.step_tokens.clear();
  stats_.checks += check;
}

void OraclePicker::count(StepPlan::Kind kind) {
  stats_.switches += kind == StepPlan::Kind::switch_part || kind == StepPlan::Kind::leave;
  stats_.stops += kind == StepPlan::Kind::stop;
  stats_.sums += kind == StepPlan::Kind::sum;
  stats_.nodes += kind == StepPlan::Kind::node;
  stats_.work += kind == StepPlan::Kind::work;
  stats_.found += kind == StepPlan::Kind::found;
  stats_.answers += kind == StepPlan::Kind::answer;
}

void OraclePicker::on_forward(const ForwardRecord& r) {
  HOGWILD_CHECK(session_ != nullptr);
  if (r.serial_step == 0) {
    history_ = r.views.at(0).at(0);
    for (const FedToken& t : r.tokens) {
      if (t.role == FeedRole::prompt) prompt_len_ += 1;
      if (t.role == FeedRole::constant &&
          std::find(constants_.begin(), constants_.end(), t.block) == constants_.end())
        constants_.push_back(t.block);
    }
  }
  // Loss flags of every fed token, by block (a reused block id starts empty).
  std::map<BlockId, size_t> fed;
  for (const FedToken& t : r.tokens) fed[t.block] += 1;
  for (auto& [b, n] : fed) flags_[b].resize(session_->block_tokens(b).size() - n);
  for (const FedToken& t : r.tokens) {
    uint8_t f = 0;
    if (t.role == FeedRole::generated) {
      auto& q = workers_.at(t.worker).unfed;
      HOGWILD_CHECK(!q.empty());
      f = q.front();
      q.pop_front();
    }
    flags_[t.block].push_back(f);
    if (t.worker >= 0) owner_[t.block] = {t.worker, t.step};
  }
  if (r.serial_step > 0) {
    for (int w = 0; w < n_workers_; ++w) {
      Snapshot& s = snap_[w];
      s.ids.clear();
      s.loss.clear();
      s.blocks.clear();
      for (BlockId b : r.views.at(w)) {
        const std::vector<int32_t>& ids = session_->block_tokens(b);
        const std::vector<uint8_t>& fl = flags_[b];
        HOGWILD_CHECK(fl.size() == ids.size());
        Block blk{b, ViewText::Kind::text, -1, false, s.ids.size(), s.ids.size() + ids.size()};
        if (b == history_) {
          blk.kind = ViewText::Kind::history;
        } else if (std::find(constants_.begin(), constants_.end(), b) == constants_.end()) {
          auto [o, k] = owner_.at(b);
          blk.writer = o;
          blk.finished =
              std::find(r.closed.begin(), r.closed.end(), std::make_pair(o, k)) != r.closed.end();
          blk.kind = layout_ == Layout::contiguous ? ViewText::Kind::output : ViewText::Kind::step;
        }
        s.ids.insert(s.ids.end(), ids.begin(), ids.end());
        s.loss.insert(s.loss.end(), fl.begin(), fl.end());
        s.blocks.push_back(blk);
      }
    }
  }
  // Promotions right after this forward (session_decode.cpp): closing steps join the history.
  for (const auto& step : r.closed) {
    for (auto& [b, n] : fed) {
      if (owner_.at(b) != step || b == history_) continue;
      auto& h = flags_[history_];
      h.insert(h.end(), flags_[b].begin(), flags_[b].end());
      flags_[b].clear();
    }
  }
}

std::vector<ViewText> OraclePicker::view_text(int w) const {
  const Snapshot& s = snap_.at(w);
  std::vector<ViewText> v;
  for (const Block& b : s.blocks) {
    ViewText t;
    t.kind = b.kind;
    t.writer = b.writer;
    t.finished = b.finished;
    size_t begin = b.begin + (b.kind == ViewText::Kind::history ? prompt_len_ : 0);
    if (b.kind != ViewText::Kind::text)
      t.bytes = codec_.bytes(
          std::vector<int32_t>(s.ids.begin() + std::min(begin, b.end), s.ids.begin() + b.end));
    v.push_back(std::move(t));
  }
  return v;
}

int32_t OraclePicker::pick(int w, std::vector<float>&) {
  Worker& ws = workers_.at(w);
  if (ws.need_plan) {
    const SeenState seen = oracle_.read(w, view_text(w));
    StepPlan plan = oracle_.plan_step(seen, ws.check);
    ws.pieces.assign(plan.pieces.begin(), plan.pieces.end());
    ws.need_plan = false;
    ws.kind = plan.kind;
    ws.start = snap_[w];
    ws.answer_yes = plan.check_answer.value_or(false);
    stats_.check_yes += plan.check_answer.value_or(false);
    // A "yes" on a real collision: another worker holds my part (not only its result is in).
    if (plan.check_answer.value_or(false)) {
      const int my = oracle_.held_part(seen, w);
      bool other = false;
      for (int o = 0; o < n_workers_ && !other; ++o)
        other = o != w && oracle_.held_part(seen, o) == my;
      stats_.collisions_yes += other;
    }
    const bool ledger = std::any_of(plan.pieces.begin(), plan.pieces.end(),
                                    [](const Piece& p) { return p.ledger; });
    stats_.ledgers += ledger;
    if (!ledger) count(plan.kind);
  }
  while (ws.tokens.empty()) {
    if (ws.pieces.empty())
      fail(
          "worker {}: the oracle's step ended but the session did not end the step; the step "
          "separator of the formatting must end every planned step",
          w);
    Piece pc = ws.pieces.front();
    if (pc.action) {  // the idle worker's action: chosen on the view now
      const StepPlan act = oracle_.plan_action(oracle_.read(w, view_text(w)));
      ws.pieces.assign(act.pieces.begin(), act.pieces.end());
      ws.kind = act.kind;
      count(act.kind);
      pc = ws.pieces.front();
    }
    ws.pieces.pop_front();
    bool trainable = true;
    if (pc.eos) {
      const std::vector<int32_t> eos = codec_.eos_ids();
      if (eos.empty()) fail("the codec has no EOS token; the scripted workers stop with it");
      ws.tokens.push_back({eos[0], pc.decision, true, false, uint8_t{2}});
      continue;
    }
    if (pc.text.empty()) {  // the claim hole
      const SeenState seen = oracle_.read(w, view_text(w));
      const bool careless = oracle_.contested(seen) && rng_.chance(opt_.careless);
      pc.text = oracle_.claim_text(oracle_.choose_part(seen, careless));
      trainable = !careless;
      stats_.claims += 1;
      stats_.careless_claims += careless;
    }
    const std::vector<int32_t> ids = codec_.encode(pc.text);
    for (size_t i = 0; i < ids.size(); ++i) {
      const bool decision = pc.decision && i == 0;
      const uint8_t flag = !trainable ? 0 : decision || pc.ledger ? 2 : 1;
      ws.tokens.push_back({ids[i], decision, trainable, pc.ledger && i + 1 == ids.size(), flag});
    }
  }
  const Pending t = ws.tokens.front();
  ws.tokens.pop_front();
  const bool step_end = ws.tokens.empty() && ws.pieces.empty();
  ws.unfed.push_back(t.flag);
  ws.step_tokens.push_back(t.token);
  stats_.decisions += t.decision;
  record(w, t.token, t.flag, t.decision || step_end, t.ledger_end);
  return t.token;
}

void OraclePicker::record(int w, int32_t token, uint8_t flag, bool segment_end, bool ledger_end) {
  Worker& ws = workers_[w];
  ws.segment.push_back(flag);
  if (ledger_end && !opt_.whole) {
    // The ledger's segment on the view at the step's start, followed by the step's tokens.
    if (opt_.keep_ledger >= 1.0 || rng_.chance(opt_.keep_ledger)) {
      const Snapshot& s0 = ws.start;
      Example e{s0.ids, std::vector<uint8_t>(s0.ids.size() + ws.step_tokens.size(), 0), w};
      e.tokens.insert(e.tokens.end(), ws.step_tokens.begin(), ws.step_tokens.end());
      const size_t n = ws.segment.size();
      HOGWILD_CHECK(n <= ws.step_tokens.size());
      std::copy(ws.segment.begin(), ws.segment.end(), e.loss.end() - n);
      examples_.push_back(std::move(e));
    }
    ws.segment.clear();
    return;
  }
  if (!segment_end && !ledger_end) return;
  const Snapshot& s = snap_[w];
  const bool step_end = ws.tokens.empty() && ws.pieces.empty();
  const bool last = !s.blocks.empty() && s.blocks.back().writer == w;
  HOGWILD_CHECK(last);  // the worker's own step (or output) closes every view
  if (opt_.whole) {
    // One worker: the whole run, recorded at the last step's end (the final answer).
    if (step_end) {
      Example e{s.ids, s.loss, w};
      e.tokens.push_back(token);
      e.loss.push_back(flag);
      if (examples_.empty())
        examples_.push_back(std::move(e));
      else
        examples_.back() = std::move(e);  // keep only the latest (the run may go on)
    }
    ws.segment.clear();
    return;
  }
  const bool check_no =
      ws.check && !ws.answer_yes && ws.kind != StepPlan::Kind::end && ws.step_tokens.size() == 1;
  const double keep = check_no ? opt_.keep_check_no
                      : ws.kind == StepPlan::Kind::stop || ws.kind == StepPlan::Kind::end
                          ? opt_.keep_stop
                      : step_end ? opt_.keep_step_end
                                 : opt_.keep_decision;
  if (keep >= 1.0 || rng_.chance(keep)) {
    Example e{s.ids, std::vector<uint8_t>(s.ids.size() + 1, 0), w};
    e.tokens.push_back(token);
    const size_t n = ws.segment.size();
    HOGWILD_CHECK(n <= e.tokens.size());
    std::copy(ws.segment.begin(), ws.segment.end(), e.loss.end() - n);
    examples_.push_back(std::move(e));
  }
  ws.segment.clear();
}

}  // namespace hogwild::collab
