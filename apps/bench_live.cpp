// loom-bench --live: frames (or plain lines) from stats() and the load's progress.
#include "bench_live.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <utility>

#include "bench_stats.hpp"

namespace loom::bench {
namespace {

// The name column fits the longest stage or model name, and at least this.
constexpr std::size_t kMinNameWidth = 14;
constexpr int kBarWidth = 10;
constexpr int kProgressWidth = 20;
// A rate over less time than one refresh (the first tick after measuring starts) would be mostly
// noise: "-" until then.
constexpr double kMinRateSpanS = kLiveRefreshMs / 1000;

std::string printf_text(const char* format, auto... values) {
  char text[256];
  std::snprintf(text, sizeof text, format, values...);
  return text;
}

std::string padded(const std::string& text, std::size_t width) {
  return text.size() >= width ? text : text + std::string(width - text.size(), ' ');
}

std::string percent(double fraction) { return printf_text("%3.0f%%", fraction * 100); }

const StageStats* find_stage(const ExecutorStats& stats, const std::string& name) {
  for (const auto& stage : stats.stages)
    if (stage.name == name) return &stage;
  return nullptr;
}

}  // namespace

std::vector<StageUse> stage_use(const ExecutorStats& previous, const ExecutorStats& current) {
  const double interval_us = current.uptime_us - previous.uptime_us;
  std::vector<StageUse> uses;
  for (const auto& stage : current.stages) {
    StageUse use{stage};
    if (interval_us > 0) {
      const StageStats* before = find_stage(previous, stage.name);
      const double busy_us = stage.busy_us - (before ? before->busy_us : 0);
      const double servers = static_cast<double>(std::max<std::size_t>(stage.threads, 1));
      use.utilization = std::clamp(busy_us / (interval_us * servers), 0.0, 1.0);
    }
    uses.push_back(std::move(use));
  }
  return uses;
}

std::string shade(double utilization) {
  static const char* const kShades[] = {" ",      "\u2581", "\u2582", "\u2583", "\u2584",
                                        "\u2585", "\u2586", "\u2587", "\u2588"};
  if (!(utilization > 0)) return kShades[0];
  const int eighths = static_cast<int>(std::ceil(std::min(utilization, 1.0) * 8));
  return kShades[std::clamp(eighths, 1, 8)];
}

std::string bar(double fraction, int width) {
  const int filled = static_cast<int>(std::lround(std::clamp(fraction, 0.0, 1.0) * width));
  std::string text(static_cast<std::size_t>(width) + 2, '.');
  text.front() = '[';
  text.back() = ']';
  std::fill_n(text.begin() + 1, filled, '#');
  return text;
}

LiveView::LiveView(std::vector<std::string> models, bool terminal)
    : models_(std::move(models)), terminal_(terminal), model_state_(models_.size()) {}

void LiveView::begin_run(std::string label) {
  const auto models = models_;
  const bool terminal = terminal_;
  *this = LiveView(models, terminal);
  label_ = std::move(label);
}

void LiveView::take_stats(const ExecutorStats& stats) {
  stages_ = stage_use(have_stats_ ? previous_ : ExecutorStats{}, stats);
  for (const auto& use : stages_) {
    auto& columns = timeline_[use.stage.name];
    columns.push_back(use.utilization);
    while (columns.size() > kLiveTimelineColumns) columns.pop_front();
  }
  previous_ = stats;
  have_stats_ = true;
  uptime_s_ = stats.uptime_us / 1e6;
}

void LiveView::take_progress(const LoadProgress& progress) {
  // A new measurement on the same executor (a sweep's next point): warming up again, or measuring
  // from a later start. Its figures start afresh; the stages' go on.
  if ((progress.warming_up && !warming_up_) || (!progress.warming_up && progress.measured_s < measured_s_))
    model_state_.assign(models_.size(), ModelState{});
  warming_up_ = progress.warming_up;
  fraction_ = progress.fraction;
  measured_s_ = progress.measured_s;
  for (std::size_t i = 0; i < model_state_.size(); ++i) {
    auto& model = model_state_[i];
    if (i < progress.completed.size()) model.completed = progress.completed[i];
    if (i < progress.new_latencies_ms.size() && !progress.new_latencies_ms[i].empty()) {
      std::vector<double> batch = progress.new_latencies_ms[i];
      std::sort(batch.begin(), batch.end());
      const auto middle = static_cast<std::ptrdiff_t>(model.sorted_ms.size());
      model.sorted_ms.insert(model.sorted_ms.end(), batch.begin(), batch.end());
      std::inplace_merge(model.sorted_ms.begin(), model.sorted_ms.begin() + middle, model.sorted_ms.end());
    }
    if (warming_up_) continue;
    // The window starts at the start of measurement, with nothing completed.
    if (model.window.empty()) model.window.emplace_back(0.0, 0.0);
    model.window.emplace_back(measured_s_, static_cast<double>(model.completed));
    // Keep the newest sample at least a second old as the base of the rate.
    while (model.window.size() > 2 && model.window[1].first <= measured_s_ - 1.0) model.window.pop_front();
  }
}

double LiveView::rate_last_second(const ModelState& model) const {
  if (model.window.size() < 2) return -1;
  const auto& [from_s, from_count] = model.window.front();
  const auto& [to_s, to_count] = model.window.back();
  return to_s - from_s >= kMinRateSpanS ? (to_count - from_count) / (to_s - from_s) : -1;
}

std::vector<std::string> LiveView::frame_lines() const {
  std::size_t width = kMinNameWidth;
  for (const auto& use : stages_) width = std::max(width, use.stage.name.size());
  for (const auto& name : models_) width = std::max(width, name.size());
  const int name_width = static_cast<int>(width);

  std::vector<std::string> lines;
  std::string head = label_.empty() ? "" : label_ + "  ";
  if (warming_up_)
    head += "warming up  ";
  else
    head += printf_text("%s %.1f s  ", done_ ? "done" : "measuring", measured_s_);
  head += bar(fraction_, kProgressWidth) + " " + percent(fraction_) + printf_text("  uptime %.1f s", uptime_s_);
  lines.push_back(head);

  lines.push_back(printf_text("%-*s %-6s %-17s %-*s %6s %6s %7s", name_width, "stage", "kind",
                              printf_text("busy (%.1f s)", kLiveRefreshMs / 1000).c_str(),
                              static_cast<int>(kLiveTimelineColumns) + 2, "last 1 s", "queue", "max", "threads"));
  for (const auto& use : stages_) {
    std::string row = padded(use.stage.name, width) + " " + padded(std::string(stage_kind_name(use.stage.kind)), 6) +
                      " " + bar(use.utilization, kBarWidth) + " " + percent(use.utilization) + " |";
    const auto it = timeline_.find(use.stage.name);
    const std::size_t columns = it == timeline_.end() ? 0 : it->second.size();
    row += std::string(kLiveTimelineColumns - columns, ' ');
    if (it != timeline_.end())
      for (double u : it->second) row += shade(u);
    row += "|";
    row += printf_text(" %6zu %6zu %7s", use.stage.queue_depth, use.stage.max_queue_depth,
                       use.stage.kind == StageKind::host ? std::to_string(use.stage.threads).c_str() : "-");
    lines.push_back(row);
  }

  lines.push_back(printf_text("%-*s %8s %10s %10s %9s %9s", name_width, "model", "done", "req/s 1 s", "req/s all",
                              "p50 ms", "p99 ms"));
  for (std::size_t i = 0; i < models_.size(); ++i) {
    const auto& model = model_state_[i];
    std::string row = padded(models_[i], width);
    if (warming_up_) {
      lines.push_back(row + printf_text(" %8s %10s %10s %9s %9s", "-", "-", "-", "-", "-"));
      continue;
    }
    const double last_second = rate_last_second(model);
    row += printf_text(" %8zu", model.completed);
    row += last_second >= 0 ? printf_text(" %10.1f", last_second) : printf_text(" %10s", "-");
    row += measured_s_ >= kMinRateSpanS ? printf_text(" %10.1f", static_cast<double>(model.completed) / measured_s_)
                                        : printf_text(" %10s", "-");
    if (model.sorted_ms.empty())
      row += printf_text(" %9s %9s", "-", "-");
    else
      row += printf_text(" %9.3f %9.3f", nearest_rank(model.sorted_ms, 50), nearest_rank(model.sorted_ms, 99));
    lines.push_back(row);
  }
  return lines;
}

std::string LiveView::summary_line() const {
  std::string line = label_.empty() ? "" : label_ + " ";
  if (warming_up_)
    line += "warming up";
  else
    line += printf_text("%s %.1f s", done_ ? "done" : "measuring", measured_s_);
  line += printf_text(" %.0f%%", fraction_ * 100);
  if (!stages_.empty()) {
    line += " | busy over the last second:";
    const char* separator = " ";
    for (const auto& use : stages_) {
      const auto& columns = timeline_.at(use.stage.name);
      double sum = 0;
      for (double u : columns) sum += u;
      line +=
          separator + use.stage.name + " " + printf_text("%.0f%%", columns.empty() ? 0 : 100 * sum / columns.size());
      separator = ", ";
    }
  }
  if (!warming_up_) {
    line += " |";
    for (std::size_t i = 0; i < models_.size(); ++i) {
      const auto& model = model_state_[i];
      line += i > 0 ? "; " : " ";
      line += models_[i] + " " + std::to_string(model.completed) + " done";
      if (const double rate = rate_last_second(model); rate >= 0) line += printf_text(", %.1f req/s", rate);
      if (!model.sorted_ms.empty())
        line += printf_text(", p50 %.3f ms, p99 %.3f ms", nearest_rank(model.sorted_ms, 50),
                            nearest_rank(model.sorted_ms, 99));
    }
  }
  return line;
}

std::string LiveView::draw() {
  const auto lines = frame_lines();
  std::string out;
  // Back to the first line of the frame on screen, then every line rewritten and cleared to its
  // end, and anything below a shorter frame cleared.
  if (drawn_lines_ > 0) out += "\r\033[" + std::to_string(drawn_lines_) + "A";
  for (const auto& line : lines) out += line + "\033[K\n";
  out += "\033[J";
  drawn_lines_ = lines.size();
  return out;
}

std::string LiveView::update(const ExecutorStats& stats, const LoadProgress& progress) {
  take_stats(stats);
  take_progress(progress);
  if (terminal_) return draw();
  if (last_line_uptime_s_ >= 0 && uptime_s_ - last_line_uptime_s_ < 1.0) return {};
  last_line_uptime_s_ = uptime_s_;
  return summary_line() + "\n";
}

std::string LiveView::finish(const LoadResult& result) {
  LoadProgress progress;
  progress.warming_up = false;
  progress.fraction = 1;
  progress.measured_s = result.measured_s;
  for (const auto& model : result.models) progress.completed.push_back(model.requests.size());
  take_progress(progress);
  // Every measured latency, those after the last tick included: the summary's figures.
  for (std::size_t i = 0; i < model_state_.size() && i < result.models.size(); ++i) {
    auto& sorted = model_state_[i].sorted_ms;
    sorted.clear();
    for (const auto& request : result.models[i].requests) sorted.push_back(request.latency_ms());
    std::sort(sorted.begin(), sorted.end());
  }
  done_ = true;
  return terminal_ ? draw() : summary_line() + "\n";
}

}  // namespace loom::bench
