package stack

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// stopGrace is how long Stop waits after SIGTERM before it sends SIGKILL.
const stopGrace = 10 * time.Second

// killWait bounds the wait for a process to disappear after SIGKILL.
const killWait = 10 * time.Second

// Proc is one process of the stack: a binary with fixed arguments, logging to
// LogFile. A Proc either belongs to the current process (it was started here,
// and it is waited for) or was reattached by Load, and is then tracked by its
// pid and the kernel's start time of that pid, so that a reused pid is never
// mistaken for it.
type Proc struct {
	// Name identifies the process in the stack, e.g. "etcd" or "skylb".
	Name string

	path   string
	args   []string
	env    []string // added to the caller's environment
	dir    string   // working directory
	log    string
	detach bool

	// ready, when set, reports whether the started process serves; Restart
	// waits for it.
	ready func(ctx context.Context) error
	// started is called after every (re)start, to record the new pid.
	started func()

	mu        sync.Mutex
	pid       int
	startTime uint64        // /proc/<pid>/stat field 22, identifies the pid
	done      chan struct{} // closed when the child exits; nil for reattached processes
	exitErr   error
}

// procState is the part of a Proc saved in stack.json.
type procState struct {
	Name      string   `json:"name"`
	PID       int      `json:"pid"`
	StartTime uint64   `json:"start_time"`
	Path      string   `json:"path"`
	Args      []string `json:"args"`
	Env       []string `json:"env,omitempty"`
	Dir       string   `json:"dir,omitempty"`
	Log       string   `json:"log"`
}

func (p *Proc) state() procState {
	p.mu.Lock()
	defer p.mu.Unlock()
	return procState{
		Name: p.Name, PID: p.pid, StartTime: p.startTime,
		Path: p.path, Args: p.args, Env: p.env, Dir: p.dir, Log: p.log,
	}
}

// start runs the process once. Its output is appended to the log file, after
// a line naming the command.
func (p *Proc) start() error {
	f, err := os.OpenFile(p.log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	fmt.Fprintf(f, "==== %s start: %s %s\n", time.Now().Format(time.RFC3339), p.path, strings.Join(p.args, " "))
	cmd := exec.Command(p.path, p.args...)
	cmd.Env = append(os.Environ(), p.env...)
	cmd.Dir = p.dir
	cmd.Stdout = f
	cmd.Stderr = f
	if p.detach {
		// A session of its own: no terminal signals, and it outlives the caller.
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	} else {
		// Killed by the kernel when the caller dies, whatever the way.
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	}
	if err := startCmd(cmd, !p.detach); err != nil {
		f.Close()
		return fmt.Errorf("start %s: %w", p.Name, err)
	}
	done := make(chan struct{})
	p.mu.Lock()
	p.pid = cmd.Process.Pid
	p.startTime, _ = procStartTime(p.pid)
	p.done = done
	p.exitErr = nil
	p.mu.Unlock()
	go func() {
		err := cmd.Wait()
		f.Close()
		p.mu.Lock()
		p.exitErr = err
		p.mu.Unlock()
		close(done)
	}()
	if p.started != nil {
		p.started()
	}
	return nil
}

// PID returns the process id of the current (or last) run.
func (p *Proc) PID() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.pid
}

// LogFile returns the path of the process's log, <Dir>/logs/<name>.log.
func (p *Proc) LogFile() string { return p.log }

// Args returns the command line arguments the process runs with.
func (p *Proc) Args() []string { return append([]string(nil), p.args...) }

// Env returns the value of an environment variable the stack set for the
// process (CoreDNS's SKYLB_METRICS_ADDR, say), or "".
func (p *Proc) Env(key string) string {
	for _, kv := range p.env {
		if k, v, ok := strings.Cut(kv, "="); ok && k == key {
			return v
		}
	}
	return ""
}

// Running reports whether the process is alive (a stopped, paused process is
// alive; a zombie is not).
func (p *Proc) Running() bool {
	p.mu.Lock()
	pid, st, done := p.pid, p.startTime, p.done
	p.mu.Unlock()
	if pid == 0 {
		return false
	}
	if done != nil {
		select {
		case <-done:
			return false
		default:
			return true
		}
	}
	return alive(pid, st)
}

// ExitError returns how the last run of a process started here ended: nil
// while it runs or when it exited with status 0.
func (p *Proc) ExitError() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.exitErr
}

// Exited returns a channel closed when the current run of a process started
// here ends; for a reattached process it is closed once the pid is gone
// (polled).
func (p *Proc) Exited() <-chan struct{} {
	p.mu.Lock()
	pid, st, done := p.pid, p.startTime, p.done
	p.mu.Unlock()
	if done != nil {
		return done
	}
	ch := make(chan struct{})
	go func() {
		for alive(pid, st) {
			time.Sleep(50 * time.Millisecond)
		}
		close(ch)
	}()
	return ch
}

// Stop sends SIGTERM (and SIGCONT, so that a paused process can act on it),
// waits up to 10 s, then sends SIGKILL, and returns once the process is
// gone. Stopping a process that does not run is not an error.
func (p *Proc) Stop() error {
	if !p.Running() {
		return nil
	}
	_ = p.signal(syscall.SIGTERM)
	_ = p.signal(syscall.SIGCONT)
	if p.wait(stopGrace) {
		return nil
	}
	return p.Kill()
}

// Kill sends SIGKILL and returns once the process is gone.
func (p *Proc) Kill() error {
	if !p.Running() {
		return nil
	}
	if err := p.signal(syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("kill %s: %w", p.Name, err)
	}
	if !p.wait(killWait) {
		return fmt.Errorf("%s (pid %d) still runs %s after SIGKILL", p.Name, p.PID(), killWait)
	}
	return nil
}

// Pause stops the process with SIGSTOP, as if it hung.
func (p *Proc) Pause() error { return p.signal(syscall.SIGSTOP) }

// Resume continues a paused process with SIGCONT.
func (p *Proc) Resume() error { return p.signal(syscall.SIGCONT) }

// Restart stops the process if it runs and starts it again with the same
// arguments, environment and ports. For the processes of the stack it returns
// once the process serves again (as Start checks it); for skylb and other
// processes once it has started.
func (p *Proc) Restart(ctx context.Context) error {
	if err := p.Respawn(); err != nil {
		return err
	}
	if p.ready == nil {
		return nil
	}
	return waitReady(ctx, p, readyTimeout(p.Name), p.ready)
}

// Respawn stops the process if it runs and starts it again with the same
// arguments, environment and ports, without waiting for it to serve: for a
// process meant to fail its readiness check, such as an etcd member that
// refuses every client's certificate.
func (p *Proc) Respawn() error {
	if err := p.Stop(); err != nil {
		return err
	}
	return p.start()
}

// signal sends sig to the process if it (still) runs.
func (p *Proc) signal(sig syscall.Signal) error {
	if !p.Running() {
		return fmt.Errorf("%s does not run", p.Name)
	}
	return syscall.Kill(p.PID(), sig)
}

// wait waits up to d for the process to exit and reports whether it did.
func (p *Proc) wait(d time.Duration) bool {
	select {
	case <-p.Exited():
		return true
	case <-time.After(d):
		return false
	}
}

// spawner starts processes from one goroutine locked to its OS thread for
// good: the kernel sends Pdeathsig when the thread that forked a child ends,
// not the process, and this thread ends only with the process.
var spawner struct {
	once sync.Once
	reqs chan spawnReq
}

type spawnReq struct {
	cmd  *exec.Cmd
	done chan error
}

// startCmd starts cmd, from the spawner thread when it has a Pdeathsig.
func startCmd(cmd *exec.Cmd, deathSig bool) error {
	if !deathSig {
		return cmd.Start()
	}
	spawner.once.Do(func() {
		spawner.reqs = make(chan spawnReq)
		go func() {
			runtime.LockOSThread() // never unlocked: the thread lives as long as the process
			for r := range spawner.reqs {
				r.done <- r.cmd.Start()
			}
		}()
	})
	done := make(chan error, 1)
	spawner.reqs <- spawnReq{cmd, done}
	return <-done
}

// alive reports whether pid is a live (not zombie) process that started at
// startTime (0: any start time).
func alive(pid int, startTime uint64) bool {
	state, st, err := procStat(pid)
	if err != nil {
		return false
	}
	if startTime != 0 && st != startTime {
		return false // the pid was reused
	}
	return state != "Z" && state != "X"
}

// procStartTime returns the start time of pid in clock ticks since boot.
func procStartTime(pid int) (uint64, error) {
	_, st, err := procStat(pid)
	return st, err
}

// procStat reads the state and start time fields of /proc/<pid>/stat.
func procStat(pid int) (state string, startTime uint64, err error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return "", 0, err
	}
	// The command name (field 2) is in parentheses and may hold anything.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return "", 0, fmt.Errorf("malformed /proc/%d/stat", pid)
	}
	fields := strings.Fields(s[i+1:])
	// fields[0] is field 3 (state); field 22 (starttime) is fields[19].
	if len(fields) < 20 {
		return "", 0, fmt.Errorf("malformed /proc/%d/stat", pid)
	}
	startTime, err = strconv.ParseUint(fields[19], 10, 64)
	return fields[0], startTime, err
}
