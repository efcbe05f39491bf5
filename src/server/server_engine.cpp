#include "server/server_engine.h"

#include "core/error.h"

namespace hogwild::server {

SessionId ServerEngine::submit(GenerationRequest req, SessionObserver* obs) {
  SessionRequest r;
  r.prompt = std::move(req.prompt);
  r.formatting = std::move(req.formatting);
  r.options = std::move(req.options);
  r.sampling = std::move(req.sampling);
  r.observer = obs;
  return engine_.submit(std::move(r));
}

bool ServerEngine::step() {
  if (engine_.idle()) return false;
  engine_.step();
  return true;
}

SessionResult ServerEngine::take_result(SessionId id) {
  const std::string err = engine_.error(id);
  SessionResult r = engine_.take(id);
  if (!err.empty()) throw Error(err);
  return r;
}

}  // namespace hogwild::server
