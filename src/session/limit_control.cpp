#include "session/limit_control.hpp"

#include <algorithm>

namespace joules::session {

limit_control::limit_control(sampler& s, control::gpu_claim& claim) : sampler_(s), claim_(claim) {
  for (const auto& g : claim_.gpus())
    in_force_.push_back(g.original_mw);
}

void limit_control::post(std::size_t k, std::uint32_t mw) {
  const std::size_t device = claim_.gpus()[k].device;
  pending_.push_back(
      {k, mw, sampler_.post([device, mw](backend& b) { return b.set_power_limit(device, mw); })});
}

limit_control::outcome limit_control::settle(pending& p, mono_time deadline) {
  outcome o{p.gpu, p.limit_mw, {}};
  if (p.result.wait_until(deadline) != std::future_status::ready) {
    o.result = {control_status::error, "the driver did not answer in time"};
    return o;
  }
  try {
    o.result = p.result.get();
  } catch (const std::exception&) {
    // The sampler stopped (or was abandoned in a hung driver call) before the change was made.
    o.result = {control_status::error, "the sampler had stopped: the change was not made"};
  }
  if (o.result.ok()) in_force_[p.gpu] = p.limit_mw;
  return o;
}

void limit_control::set(std::uint32_t mw, std::optional<std::size_t> k) {
  if (k) {
    post(*k, mw);
    return;
  }
  for (std::size_t g = 0; g < claim_.gpus().size(); ++g)
    post(g, mw);
}

std::vector<limit_control::outcome> limit_control::take() {
  std::vector<outcome> out;
  // In order: an outcome waits for the ones asked before it.
  std::size_t done = 0;
  while (done < pending_.size() &&
         pending_[done].result.wait_for(std::chrono::seconds(0)) == std::future_status::ready) {
    out.push_back(settle(pending_[done], steady::now()));
    ++done;
  }
  pending_.erase(pending_.begin(), pending_.begin() + static_cast<std::ptrdiff_t>(done));
  return out;
}

std::vector<limit_control::outcome> limit_control::set_and_wait(std::uint32_t mw,
                                                                std::chrono::milliseconds wait) {
  set(mw);
  const mono_time deadline = steady::now() + wait;
  std::vector<outcome> out;
  for (auto& p : pending_)
    out.push_back(settle(p, deadline));
  pending_.clear();
  return out;
}

control_result limit_control::probe(std::chrono::milliseconds wait) {
  claim_.write_journal();
  const mono_time deadline = steady::now() + wait;
  for (std::size_t k = 0; k < claim_.gpus().size(); ++k)
    post(k, claim_.gpus()[k].original_mw);
  control_result first;
  for (auto& p : pending_) {
    const outcome o = settle(p, deadline);
    if (!o.result.ok() && first.ok()) first = o.result;
  }
  pending_.clear();
  if (first.ok()) return first;
  // Nothing changed (each set was of the limit in force): the journal has nothing to restore.
  for (std::size_t k = 0; k < claim_.gpus().size(); ++k)
    claim_.restored(k);
  return first;
}

std::vector<limit_control::outcome> limit_control::restore(std::chrono::milliseconds wait) {
  const auto outstanding = claim_.outstanding();
  for (const std::size_t k : outstanding)
    post(k, claim_.gpus()[k].original_mw);
  const mono_time deadline = steady::now() + wait;
  std::vector<outcome> last(claim_.gpus().size());
  std::vector<bool> seen(claim_.gpus().size(), false);
  for (auto& p : pending_) {
    // The last outcome of each GPU is the restore, asked after every other change.
    last[p.gpu] = settle(p, deadline);
    seen[p.gpu] = true;
  }
  pending_.clear();
  std::vector<outcome> out;
  for (const std::size_t k : outstanding) {
    if (!seen[k]) continue;
    if (last[k].result.ok() && !claim_.restored(k)) {
      last[k].result = {control_status::error,
                        "the limit is back but its journal could not be removed"};
    }
    out.push_back(last[k]);
  }
  return out;
}

}  // namespace joules::session
