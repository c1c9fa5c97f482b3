package cluster

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Down stops every process of the cluster and removes its network
// namespaces, routes, bridge and cgroups, and the nodes' data (logs stay in
// <Dir>/logs). It works from the state file alone, so it also removes what a
// failed Up left, from any process; calling it again does nothing more.
func (c *Cluster) Down() error {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c.mu.Lock()
	st := c.st
	st.Procs = slices.Clone(c.st.Procs)
	c.mu.Unlock()
	var errs []error
	stop := func(match func(name string) bool) {
		for i := len(st.Procs) - 1; i >= 0; i-- {
			if p := st.Procs[i]; match(p.Name) {
				if err := p.stop(); err != nil {
					errs = append(errs, err)
				}
			}
		}
	}
	suffix := func(s ...string) func(string) bool {
		return func(name string) bool {
			for _, x := range s {
				if strings.HasSuffix(name, "/"+x) {
					return true
				}
			}
			return false
		}
	}
	// The node agents first, then what runs the containers, then the
	// control plane.
	stop(suffix("kube-proxy", "kubelet"))
	for _, cg := range st.Cgroups {
		if err := killCgroup(cg); err != nil {
			errs = append(errs, err)
		}
	}
	stop(suffix("containerd"))
	// The shims, which name a node's containerd socket; not the control
	// plane, which stops next.
	running := map[int]bool{}
	for _, p := range st.Procs {
		if p.alive() {
			running[p.PID] = true
		}
	}
	if err := killAll(c.Dir, running); err != nil {
		errs = append(errs, err)
	}
	stop(suffix("mntns"))
	stop(func(name string) bool { return name == "kube-scheduler" || name == "kube-controller-manager" })
	stop(func(name string) bool { return name == "kube-apiserver" })
	stop(func(name string) bool { return name == "etcd" })
	if err := killAll(c.Dir, nil); err != nil {
		errs = append(errs, err)
	}
	for _, ns := range st.Netns {
		if out, err := run(ctx, "ip", "netns", "del", ns); err != nil && !strings.Contains(out, "No such file") {
			errs = append(errs, err)
		}
	}
	for _, r := range st.Routes {
		if out, err := run(ctx, "ip", "route", "del", r); err != nil && !strings.Contains(out, "No such process") {
			errs = append(errs, err)
		}
	}
	if st.Bridge != "" {
		if out, err := run(ctx, "ip", "link", "del", st.Bridge); err != nil && !strings.Contains(out, "Cannot find device") {
			errs = append(errs, err)
		}
	}
	for _, cg := range st.Cgroups {
		if err := removeCgroup(cg); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("cluster down: %w", err)
	}
	for _, d := range []string{"nodes", "etcd", "pv", "kcm-certs", "flexvolume"} {
		if err := os.RemoveAll(filepath.Join(c.Dir, d)); err != nil {
			return fmt.Errorf("cluster down: %w", err)
		}
	}
	if err := os.Remove(filepath.Join(c.Dir, StateFile)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

// killAll kills every process whose command line names dir, except those
// in except, and waits for them to go.
func killAll(dir string, except map[int]bool) error {
	deadline := time.Now().Add(10 * time.Second)
	for {
		pids := slices.DeleteFunc(processesWith(dir+"/"), func(pid int) bool { return except[pid] })
		if len(pids) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("processes of %s still run after SIGKILL: %v", dir, pids)
		}
		for _, pid := range pids {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// killCgroup kills every process in the cgroup (in any hierarchy), until it
// is empty: the node's containers.
func killCgroup(name string) error {
	deadline := time.Now().Add(10 * time.Second)
	for {
		pids := cgroupProcs(name)
		if len(pids) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("processes of cgroup %s still run after SIGKILL: %v", name, pids)
		}
		for _, pid := range pids {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// cgroupProcs returns the processes in the cgroup's subtree, in every
// hierarchy.
func cgroupProcs(name string) []int {
	seen := map[int]bool{}
	var out []int
	for _, h := range cgroupHierarchies(true) {
		_ = filepath.WalkDir(filepath.Join(h, name), func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.Name() != "cgroup.procs" {
				return nil
			}
			b, _ := os.ReadFile(p)
			for _, f := range strings.Fields(string(b)) {
				if pid, err := strconv.Atoi(f); err == nil && !seen[pid] {
					seen[pid] = true
					out = append(out, pid)
				}
			}
			return nil
		})
	}
	return out
}

// removeCgroup removes the cgroup's directories, deepest first, in every
// hierarchy.
func removeCgroup(name string) error {
	var errs []error
	for _, h := range cgroupHierarchies(true) {
		root := filepath.Join(h, name)
		var dirs []string
		_ = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				dirs = append(dirs, p)
			}
			return nil
		})
		for i := len(dirs) - 1; i >= 0; i-- {
			if err := rmdirRetry(dirs[i]); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

// rmdirRetry removes an empty cgroup directory; a cgroup whose last process
// just died may be busy for a moment.
func rmdirRetry(dir string) error {
	var err error
	for range 50 {
		if err = syscall.Rmdir(dir); err == nil || errors.Is(err, syscall.ENOENT) {
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("rmdir %s: %w", dir, err)
}
