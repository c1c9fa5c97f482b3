package kubeclient

import (
	"flag"
	"strings"
	"sync"
	"time"
	"unicode"

	"github.com/sirupsen/logrus"
	"k8s.io/klog/v2"
)

// DefaultRepeatEvery is how often a client-go message that repeats is logged:
// an outage makes the reflectors say the same thing again and again.
const DefaultRepeatEvery = 30 * time.Second

// RouteKlog sends client-go's log lines (klog) through log, with klog's
// severity: errors as errors, warnings (and infos that begin "Warning:", as
// the reflector words a watch that ended with an error) as warnings, other
// infos at debug level. A line with the same source and text, digits aside,
// is logged at most once every repeatEvery (0 means DefaultRepeatEvery); the
// next one says how many were left out.
func RouteKlog(log logrus.FieldLogger, repeatEvery time.Duration) {
	if repeatEvery <= 0 {
		repeatEvery = DefaultRepeatEvery
	}
	fs := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(fs)
	_ = fs.Set("logtostderr", "false")
	_ = fs.Set("alsologtostderr", "false")
	_ = fs.Set("stderrthreshold", "FATAL")
	// Each line once, not once per severity at or below its own.
	_ = fs.Set("one_output", "true")
	klog.SetOutput(&klogWriter{log: log.WithField("component", "client-go"), every: repeatEvery, seen: map[string]*repeat{}})
}

// maxRepeatKeys bounds the lines remembered for rate limiting.
const maxRepeatKeys = 1000

type repeat struct {
	logged  time.Time
	skipped int
}

type klogWriter struct {
	log   logrus.FieldLogger
	every time.Duration

	mu   sync.Mutex
	seen map[string]*repeat
}

// Write logs one klog line: "Lmmdd hh:mm:ss.uuuuuu pid file:line] message".
func (k *klogWriter) Write(p []byte) (int, error) {
	line := strings.TrimRight(string(p), "\n")
	level, source, msg := parseKlog(line)
	skipped, ok := k.admit(source + "|" + strings.Map(dropDigits, msg))
	if !ok {
		return len(p), nil
	}
	entry := k.log.WithField("source", source)
	if skipped > 0 {
		entry = entry.WithField("repeated", skipped)
	}
	switch level {
	case logrus.ErrorLevel:
		entry.Error(msg)
	case logrus.WarnLevel:
		entry.Warn(msg)
	default:
		entry.Debug(msg)
	}
	return len(p), nil
}

// admit reports whether the line of key is logged now, and how many like it
// were left out since it was last logged.
func (k *klogWriter) admit(key string) (int, bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	now := time.Now()
	r := k.seen[key]
	if r == nil {
		if len(k.seen) >= maxRepeatKeys {
			clear(k.seen)
		}
		k.seen[key] = &repeat{logged: now}
		return 0, true
	}
	if now.Sub(r.logged) < k.every {
		r.skipped++
		return 0, false
	}
	skipped := r.skipped
	r.logged, r.skipped = now, 0
	return skipped, true
}

// parseKlog splits a klog line into its level, its source file:line and its
// message; a line without klog's header is an info.
func parseKlog(line string) (logrus.Level, string, string) {
	header, msg, ok := strings.Cut(line, "] ")
	if !ok || header == "" {
		return logrus.DebugLevel, "", line
	}
	source := header[strings.LastIndexByte(header, ' ')+1:]
	switch header[0] {
	case 'E', 'F':
		return logrus.ErrorLevel, source, msg
	case 'W':
		return logrus.WarnLevel, source, msg
	case 'I':
		if strings.HasPrefix(msg, `"Warning:`) || strings.HasPrefix(msg, "Warning:") {
			return logrus.WarnLevel, source, msg
		}
		return logrus.DebugLevel, source, msg
	}
	return logrus.DebugLevel, "", line
}

func dropDigits(r rune) rune {
	if unicode.IsDigit(r) {
		return -1
	}
	return r
}
