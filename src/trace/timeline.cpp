// Timeline: a thread-safe event list, its busy-time summary, and the Chrome trace JSON it is
// written as and read back from (the format: "Trace Event Format", Google, 2016).
#include "loom/trace.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <istream>
#include <ostream>
#include <set>
#include <utility>

#include "loom/error.hpp"

namespace loom {
namespace {

using Json = nlohmann::ordered_json;
using Interval = std::pair<double, double>;  // [start, end) in µs

// Length of the union of `intervals` (overlaps counted once); reorders its argument.
double union_length(std::vector<Interval>& intervals) {
  std::sort(intervals.begin(), intervals.end());
  double total = 0;
  bool open = false;
  Interval current{0, 0};
  for (const auto& interval : intervals) {
    if (open && interval.first <= current.second) {
      current.second = std::max(current.second, interval.second);
      continue;
    }
    if (open) total += current.second - current.first;
    current = interval;
    open = true;
  }
  if (open) total += current.second - current.first;
  return total;
}

bool starts_with(const std::string& text, const char* prefix) { return text.rfind(prefix, 0) == 0; }

bool is_device_track(const std::string& track) { return starts_with(track, "stream:") || starts_with(track, "sim:"); }

// Rows top to bottom in a viewer: the dispatcher's decisions, then the streams in pipeline order
// (upload, the models', download), the simulator's resources, and the request lives last.
int track_rank(const std::string& track) {
  if (starts_with(track, "host:")) return 0;
  if (track == "stream:upload") return 1;
  if (track == "stream:download") return 3;
  if (starts_with(track, "stream:")) return 2;
  if (starts_with(track, "sim:")) return 4;
  if (starts_with(track, "request:")) return 5;
  return 6;
}

// Chrome trace times are µs; a nanosecond is finer than any clock Loom reads.
double to_ns_precision(double us) { return std::round(us * 1000.0) / 1000.0; }

// Within one thread row a viewer expects slices to nest; partly overlapping events (request lives
// of a model with several requests outstanding) go to extra rows of the same name, "lanes".
// Returns the lane of each event of one track, indices into `events`.
std::vector<std::size_t> assign_lanes(const std::vector<const TraceEvent*>& events, std::size_t& lane_count) {
  constexpr double kTolerance = 1e-3;  // the writer's precision: touching events share a lane
  std::vector<std::size_t> lanes(events.size(), 0);
  std::vector<double> lane_end;
  for (std::size_t i = 0; i < events.size(); ++i) {
    const TraceEvent& e = *events[i];
    if (e.duration_us <= 0) continue;  // instants sit on the first lane, between or on slices
    std::size_t lane = 0;
    while (lane < lane_end.size() && e.start_us < lane_end[lane] - kTolerance) ++lane;
    if (lane == lane_end.size()) lane_end.push_back(0);
    lane_end[lane] = e.start_us + e.duration_us;
    lanes[i] = lane;
  }
  lane_count = std::max<std::size_t>(lane_end.size(), 1);
  return lanes;
}

std::string describe(const Json& value) { return value.is_string() ? value.get<std::string>() : value.dump(); }

[[noreturn]] void malformed(std::size_t index, const std::string& what) {
  throw Error(ErrorCode::invalid_argument, "chrome trace: event " + std::to_string(index) + ": " + what);
}

double number_field(const Json& event, const char* key, std::size_t index) {
  auto it = event.find(key);
  if (it == event.end() || !it->is_number()) malformed(index, std::string("'") + key + "' is missing or not a number");
  return it->get<double>();
}

}  // namespace

Timeline::Timeline(const Timeline& other) {
  std::lock_guard lock(other.mutex_);
  events_ = other.events_;
}

Timeline& Timeline::operator=(const Timeline& other) {
  if (this != &other) {
    std::scoped_lock lock(mutex_, other.mutex_);
    events_ = other.events_;
  }
  return *this;
}

void Timeline::add(TraceEvent event) {
  std::lock_guard lock(mutex_);
  events_.push_back(std::move(event));
}

std::vector<TraceEvent> Timeline::events() const {
  std::vector<TraceEvent> sorted;
  {
    std::lock_guard lock(mutex_);
    sorted = events_;
  }
  std::stable_sort(sorted.begin(), sorted.end(), [](const TraceEvent& a, const TraceEvent& b) {
    if (a.start_us != b.start_us) return a.start_us < b.start_us;
    return a.track < b.track;
  });
  return sorted;
}

std::vector<std::string> Timeline::tracks() const {
  std::set<std::string> names;
  {
    std::lock_guard lock(mutex_);
    for (const auto& e : events_) names.insert(e.track);
  }
  return {names.begin(), names.end()};
}

void Timeline::clear() {
  std::lock_guard lock(mutex_);
  events_.clear();
}

bool Timeline::empty() const {
  std::lock_guard lock(mutex_);
  return events_.empty();
}

UtilizationSummary Timeline::utilization() const {
  const std::vector<TraceEvent> all = events();
  UtilizationSummary summary;
  if (all.empty()) return summary;
  double first = all.front().start_us, last = first;
  std::map<std::string, std::vector<Interval>> per_track;
  std::vector<Interval> device;
  for (const auto& e : all) {
    first = std::min(first, e.start_us);
    last = std::max(last, e.start_us + e.duration_us);
    auto& intervals = per_track[e.track];  // instant-only tracks are listed too, 0 busy
    if (e.duration_us <= 0) continue;
    intervals.emplace_back(e.start_us, e.start_us + e.duration_us);
    if (is_device_track(e.track)) device.emplace_back(e.start_us, e.start_us + e.duration_us);
  }
  summary.span_us = last - first;
  const auto fraction = [&](double busy) { return summary.span_us > 0 ? busy / summary.span_us : 0.0; };
  for (auto& [track, intervals] : per_track) {
    TrackUtilization u;
    u.track = track;
    u.busy_us = union_length(intervals);
    u.busy_fraction = fraction(u.busy_us);
    summary.tracks.push_back(std::move(u));
  }
  summary.device_busy_fraction = fraction(union_length(device));
  return summary;
}

void Timeline::write_chrome_trace(std::ostream& out) const {
  const std::vector<TraceEvent> all = events();
  std::map<std::string, std::vector<const TraceEvent*>> by_track;
  for (const auto& e : all) by_track[e.track].push_back(&e);
  std::vector<std::string> order;
  for (const auto& [track, events] : by_track) order.push_back(track);
  std::stable_sort(order.begin(), order.end(),
                   [](const std::string& a, const std::string& b) { return track_rank(a) < track_rank(b); });

  constexpr int kPid = 1;
  std::vector<Json> lines;
  lines.push_back({{"ph", "M"}, {"name", "process_name"}, {"pid", kPid}, {"tid", 0}, {"args", {{"name", "loom"}}}});
  int next_tid = 1;
  for (const auto& track : order) {
    const auto& events = by_track[track];
    std::size_t lane_count = 1;
    const std::vector<std::size_t> lanes = assign_lanes(events, lane_count);
    const int first_tid = next_tid;
    next_tid += static_cast<int>(lane_count);
    for (std::size_t lane = 0; lane < lane_count; ++lane) {
      const int tid = first_tid + static_cast<int>(lane);
      // Every lane carries the track's name: readers map rows back to tracks by name alone.
      lines.push_back({{"ph", "M"}, {"name", "thread_name"}, {"pid", kPid}, {"tid", tid}, {"args", {{"name", track}}}});
      lines.push_back(
          {{"ph", "M"}, {"name", "thread_sort_index"}, {"pid", kPid}, {"tid", tid}, {"args", {{"sort_index", tid}}}});
    }
    for (std::size_t i = 0; i < events.size(); ++i) {
      const TraceEvent& e = *events[i];
      Json line;
      line["name"] = e.name;
      line["cat"] = e.category;
      line["ph"] = e.duration_us > 0 ? "X" : "i";
      line["pid"] = kPid;
      line["tid"] = first_tid + static_cast<int>(lanes[i]);
      line["ts"] = to_ns_precision(e.start_us);
      if (e.duration_us > 0)
        line["dur"] = to_ns_precision(e.duration_us);
      else
        line["s"] = "t";  // an instant scoped to its thread row
      if (!e.args.empty()) {
        Json args = Json::object();
        for (const auto& [key, value] : e.args) args[key] = value;
        line["args"] = std::move(args);
      }
      lines.push_back(std::move(line));
    }
  }

  // One event per line: diffable, greppable, and still one JSON document.
  out << "{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n";
  for (std::size_t i = 0; i < lines.size(); ++i) out << lines[i].dump() << (i + 1 < lines.size() ? ",\n" : "\n");
  out << "]}\n";
}

void Timeline::write_chrome_trace(const std::string& path) const {
  std::ofstream out(path);
  if (!out) throw Error(ErrorCode::invalid_argument, "cannot write the trace to '" + path + "'");
  write_chrome_trace(out);
  out.flush();
  if (!out) throw Error(ErrorCode::invalid_argument, "writing the trace to '" + path + "' failed");
}

Timeline read_chrome_trace(std::istream& in) {
  Json doc;
  try {
    doc = Json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    throw Error(ErrorCode::invalid_argument, std::string("chrome trace: not valid JSON: ") + e.what());
  }
  // The format allows a bare array of events as well as the object form Loom writes.
  const Json* events = &doc;
  if (doc.is_object()) {
    auto it = doc.find("traceEvents");
    if (it == doc.end() || !it->is_array())
      throw Error(ErrorCode::invalid_argument, "chrome trace: no \"traceEvents\" array");
    events = &*it;
  } else if (!doc.is_array()) {
    throw Error(ErrorCode::invalid_argument, "chrome trace: expected an object with \"traceEvents\" or an array");
  }

  const auto thread_key = [](const Json& event) {
    return event.value("pid", Json()).dump() + "/" + event.value("tid", Json()).dump();
  };
  std::map<std::string, std::string> thread_names;
  for (std::size_t i = 0; i < events->size(); ++i) {
    const Json& e = (*events)[i];
    if (!e.is_object()) malformed(i, "not an object");
    if (e.value("ph", "") != "M" || e.value("name", "") != "thread_name") continue;
    auto args = e.find("args");
    if (args == e.end() || !args->is_object() || !args->contains("name") || !(*args)["name"].is_string())
      malformed(i, "thread_name without args.name");
    thread_names[thread_key(e)] = (*args)["name"].get<std::string>();
  }

  Timeline timeline;
  for (std::size_t i = 0; i < events->size(); ++i) {
    const Json& e = (*events)[i];
    auto ph = e.find("ph");
    if (ph == e.end() || !ph->is_string()) malformed(i, "'ph' is missing or not a string");
    const std::string phase = ph->get<std::string>();
    if (phase != "X" && phase != "i" && phase != "I") continue;  // metadata, counters, flows: not events here
    TraceEvent event;
    if (auto name = e.find("name"); name != e.end()) event.name = describe(*name);
    if (auto cat = e.find("cat"); cat != e.end()) event.category = describe(*cat);
    const std::string key = thread_key(e);
    auto named = thread_names.find(key);
    event.track = named != thread_names.end() ? named->second : "thread " + key;
    event.start_us = number_field(e, "ts", i);
    if (phase == "X") {
      event.duration_us = number_field(e, "dur", i);
      if (!(event.duration_us >= 0)) malformed(i, "negative 'dur'");
    }
    if (auto args = e.find("args"); args != e.end()) {
      if (!args->is_object()) malformed(i, "'args' is not an object");
      for (const auto& [k, v] : args->items()) event.args[k] = describe(v);
    }
    timeline.add(std::move(event));
  }
  return timeline;
}

}  // namespace loom
