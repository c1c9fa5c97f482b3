// Command cluster starts, stops and shows the real three-node Kubernetes
// cluster of package test/cluster (scripts/cluster.sh runs it):
//
//	cluster up      builds the images (test/images), starts the cluster and
//	                prints the KUBECONFIG line; the cluster keeps running
//	cluster down    stops the cluster and removes what it created
//	cluster status  shows the nodes, the pods and the processes
//
// Flags: -dir (default <repo>/.cluster), -bin (default <repo>/bin), -nodes
// (default 3), -etcd-bin (etcd, etcdctl and etcdutl of the etcd image,
// default -bin).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"sort"
	"syscall"
	"time"

	"github.com/skylb/skylb/test/cluster"
	"github.com/skylb/skylb/test/images"
	"github.com/skylb/skylb/test/stack"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "cluster:", err)
		os.Exit(1)
	}
}

func run() error {
	fs := flag.NewFlagSet("cluster", flag.ExitOnError)
	dir := fs.String("dir", "", "state directory (default <repo>/.cluster)")
	bin := fs.String("bin", "", "directory of the binaries (default <repo>/bin)")
	etcdBin := fs.String("etcd-bin", "", "directory of etcd, etcdctl and etcdutl for the etcd image (default -bin)")
	nodes := fs.Int("nodes", 3, "number of nodes")
	if len(os.Args) < 2 {
		return errors.New("usage: cluster up|down|status [flags]")
	}
	verb := os.Args[1]
	if err := fs.Parse(os.Args[2:]); err != nil {
		return err
	}
	root, err := stack.FindRoot()
	if err != nil {
		return err
	}
	if *dir == "" {
		*dir = filepath.Join(root, ".cluster")
	}
	if *bin == "" {
		*bin = filepath.Join(root, "bin")
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	switch verb {
	case "up":
		return up(ctx, root, *dir, *bin, *etcdBin, *nodes)
	case "down":
		c, err := cluster.Load(*dir)
		if errors.Is(err, os.ErrNotExist) {
			fmt.Println("no cluster in", *dir)
			return nil
		}
		if err != nil {
			return err
		}
		if err := c.Down(); err != nil {
			return err
		}
		fmt.Println("cluster down")
		return nil
	case "status":
		return status(ctx, *dir)
	}
	return fmt.Errorf("unknown command %q: want up, down or status", verb)
}

func up(ctx context.Context, root, dir, bin, etcdBin string, nodes int) error {
	imgs, err := images.Build(ctx, images.Options{
		Root: root, Bin: bin, EtcdBin: etcdBin, Cache: filepath.Join(dir, "cache"), Log: os.Stderr,
	})
	if err != nil {
		return err
	}
	start := time.Now()
	c, err := cluster.Up(ctx, cluster.Options{
		Dir: dir, Bin: bin, Nodes: nodes, Images: images.Tarballs(imgs), Log: os.Stderr,
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "cluster up in %.1fs (%d nodes); stop it with scripts/cluster.sh down\n",
		time.Since(start).Seconds(), len(c.Nodes))
	fmt.Println("KUBECONFIG=" + c.Kubeconfig)
	return nil
}

func status(ctx context.Context, dir string) error {
	c, err := cluster.Load(dir)
	if errors.Is(err, os.ErrNotExist) {
		fmt.Println("no cluster in", dir)
		return nil
	}
	if err != nil {
		return err
	}
	fmt.Println("KUBECONFIG=" + c.Kubeconfig)
	for _, n := range c.Nodes {
		fmt.Printf("node %s  %s  pods %s  netns %s\n", n.Name, n.IP, n.PodCIDR, n.Netns)
	}
	procs := c.Procs()
	names := make([]string, 0, len(procs))
	for name := range procs {
		names = append(names, name)
	}
	sort.Strings(names)
	fmt.Println("\nprocesses:")
	for _, name := range names {
		fmt.Printf("  %-24s pid %d\n", name, procs[name])
	}
	for _, args := range [][]string{{"get", "nodes", "-o", "wide"}, {"get", "pods", "-A", "-o", "wide"}} {
		out, err := c.Kubectl(ctx, args...)
		if err != nil {
			fmt.Println(err)
			continue
		}
		fmt.Println()
		fmt.Print(out)
	}
	return nil
}
