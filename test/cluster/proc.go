package cluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// stopGrace is how long a stop waits after SIGTERM before SIGKILL.
const stopGrace = 10 * time.Second

// proc is one process the cluster started, as recorded in the state file:
// enough to find it again from another process (its pid and the kernel's
// start time of that pid, so that a reused pid is never taken for it) and
// to start it again.
type proc struct {
	Name      string   `json:"name"` // e.g. "etcd", "node-1/kubelet"
	PID       int      `json:"pid"`
	StartTime uint64   `json:"start_time"`
	Args      []string `json:"args"` // argv, argv[0] the program
	Log       string   `json:"log"`
}

// spawn starts args detached (a session of its own, so that it outlives the
// caller) with its output appended to logFile.
func spawn(name, logFile string, args ...string) (proc, error) {
	f, err := os.OpenFile(logFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return proc{}, err
	}
	defer f.Close()
	fmt.Fprintf(f, "==== %s start: %s\n", time.Now().Format(time.RFC3339), strings.Join(args, " "))
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return proc{}, fmt.Errorf("start %s: %w", name, err)
	}
	p := proc{Name: name, PID: cmd.Process.Pid, Args: args, Log: logFile}
	p.StartTime, _ = startTime(p.PID)
	// Reap it when it exits while this process still runs; otherwise init does.
	go func() { _ = cmd.Wait() }()
	return p, nil
}

// alive reports whether the process runs (a zombie does not).
func (p proc) alive() bool {
	if p.PID <= 0 {
		return false
	}
	state, st, err := stat(p.PID)
	return err == nil && (p.StartTime == 0 || st == p.StartTime) && state != "Z" && state != "X"
}

// stop sends SIGTERM, waits up to stopGrace, then sends SIGKILL, and
// returns once the process is gone.
func (p proc) stop() error {
	if !p.alive() {
		return nil
	}
	_ = syscall.Kill(p.PID, syscall.SIGTERM)
	if p.waitGone(stopGrace) {
		return nil
	}
	return p.kill()
}

// kill sends SIGKILL and waits for the process to go.
func (p proc) kill() error {
	if !p.alive() {
		return nil
	}
	if err := syscall.Kill(p.PID, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("kill %s: %w", p.Name, err)
	}
	if !p.waitGone(10 * time.Second) {
		return fmt.Errorf("%s (pid %d) still runs after SIGKILL", p.Name, p.PID)
	}
	return nil
}

func (p proc) waitGone(d time.Duration) bool {
	deadline := time.Now().Add(d)
	for p.alive() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(50 * time.Millisecond)
	}
	return true
}

// startTime returns the start time of pid in clock ticks since boot.
func startTime(pid int) (uint64, error) {
	_, st, err := stat(pid)
	return st, err
}

// stat reads the state (field 3) and start time (field 22) of
// /proc/<pid>/stat.
func stat(pid int) (string, uint64, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return "", 0, err
	}
	s := string(b)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(fields) < 20 {
		return "", 0, fmt.Errorf("malformed /proc/%d/stat", pid)
	}
	st, err := strconv.ParseUint(fields[19], 10, 64)
	return fields[0], st, err
}

// run runs a command to completion and returns its output; the error
// includes the output.
func run(ctx context.Context, args ...string) (string, error) {
	out, err := exec.CommandContext(ctx, args[0], args[1:]...).CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("%s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return string(out), nil
}

// processesWith returns the pids of the processes whose command line
// contains s (the cluster's directory: shims and anything else started with
// a path inside it).
func processesWith(s string) []int {
	entries, _ := os.ReadDir("/proc")
	var pids []int
	skip := ancestors()
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || skip[pid] {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err != nil || !strings.Contains(string(b), s) {
			continue
		}
		if state, _, err := stat(pid); err == nil && state != "Z" {
			pids = append(pids, pid)
		}
	}
	return pids
}

// ancestors returns this process and its ancestors (a "go run" whose
// command line names the cluster's directory is not one of its processes).
func ancestors() map[int]bool {
	out := map[int]bool{}
	for pid := os.Getpid(); pid > 1 && !out[pid]; {
		out[pid] = true
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err != nil {
			break
		}
		s := string(b)
		fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		if len(fields) < 2 {
			break
		}
		pid, _ = strconv.Atoi(fields[1])
	}
	return out
}

// fatal is an error a wait does not retry.
type fatal struct{ error }

// waitFor polls check every interval until it returns nil, a fatal error,
// or the timeout (or ctx) ends, and then returns its last error.
func waitFor(ctx context.Context, timeout, interval time.Duration, what string, check func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for {
		err := check(ctx)
		if err == nil {
			return nil
		}
		var f fatal
		if errors.As(err, &f) {
			return fmt.Errorf("wait for %s: %w", what, f.error)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("wait for %s: %w (last: %v)", what, ctx.Err(), err)
		case <-time.After(interval):
		}
	}
}
