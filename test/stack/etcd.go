package stack

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
)

// setEtcdMembers derives the members of the DNS etcd from the options and ports.
func (s *Stack) setEtcdMembers() {
	p := s.Ports
	first := EtcdMember{
		Name:      "etcd",
		ClientURL: fmt.Sprintf("https://127.0.0.1:%d", p.Etcd),
		PeerURL:   fmt.Sprintf("https://127.0.0.1:%d", p.EtcdPeer),
	}
	if p.EtcdMetrics != 0 {
		first.MetricsURL = fmt.Sprintf("http://127.0.0.1:%d", p.EtcdMetrics)
	}
	s.EtcdCluster = []EtcdMember{first}
	if s.Options.EtcdMembers > 1 {
		s.EtcdCluster[0].Name = "etcd-1"
		for i, m := range p.EtcdMore {
			s.EtcdCluster = append(s.EtcdCluster, EtcdMember{
				Name:       "etcd-" + strconv.Itoa(i+2),
				ClientURL:  fmt.Sprintf("https://127.0.0.1:%d", m.Client),
				PeerURL:    fmt.Sprintf("https://127.0.0.1:%d", m.Peer),
				MetricsURL: fmt.Sprintf("http://127.0.0.1:%d", m.Metrics),
			})
		}
	}
	s.EtcdURLs = nil
	for _, m := range s.EtcdCluster {
		s.EtcdURLs = append(s.EtcdURLs, m.ClientURL)
	}
}

// etcdMember returns the member of the DNS etcd whose process is name.
func (s *Stack) etcdMember(name string) (EtcdMember, bool) {
	for _, m := range s.EtcdCluster {
		if m.Name == name {
			return m, true
		}
	}
	return EtcdMember{}, false
}

// startEtcd starts every member of the DNS etcd together and waits until each
// serves with a leader.
func (s *Stack) startEtcd(ctx context.Context) error {
	var names []string
	for _, m := range s.EtcdCluster {
		names = append(names, m.Name)
	}
	return s.startComponents(ctx, names...)
}

// etcdSpec is the command line of a member of the DNS etcd: etcd/run-etcd.sh
// with the production flags of etcd/etcd.flags, then, for a cluster, the
// whole membership (later flags win), then Options.EtcdFlags.
func (s *Stack) etcdSpec(m EtcdMember) componentSpec {
	dataDir := filepath.Join(s.Dir, "etcd-data")
	if len(s.EtcdCluster) > 1 {
		dataDir = filepath.Join(s.Dir, m.Name+"-data")
	}
	args := []string{filepath.Join(s.Root, "etcd", "run-etcd.sh"), s.Certs, dataDir, m.ClientURL, m.PeerURL, "--log-level=warn"}
	if m.MetricsURL != "" {
		args = append(args, "--listen-metrics-urls="+m.MetricsURL)
	}
	if len(s.EtcdCluster) > 1 {
		var peers []string
		for _, o := range s.EtcdCluster {
			peers = append(peers, o.Name+"="+o.PeerURL)
		}
		args = append(args, "--initial-cluster="+strings.Join(peers, ","), "--initial-cluster-token=skylb-stack")
	}
	args = append(args, s.EtcdFlags...)
	return componentSpec{
		path: "/bin/bash",
		args: args,
		env:  []string{"SKYLB_ETCD=" + s.EtcdBinary, "SKYLB_ETCD_NAME=" + m.Name},
	}
}

// etcdMemberReady succeeds once member m answers with a leader elected.
func (s *Stack) etcdMemberReady(ctx context.Context, m EtcdMember) error {
	c, err := s.etcdClient("root", []string{m.ClientURL})
	if err != nil {
		return err
	}
	defer c.Close()
	st, err := c.Status(ctx, m.ClientURL)
	if err != nil {
		return err
	}
	if st.Leader == 0 {
		return errors.New("no leader yet")
	}
	return nil
}

// EtcdLeader returns the member of the DNS etcd that leads the cluster, as
// the running members report it.
func (s *Stack) EtcdLeader(ctx context.Context) (EtcdMember, error) {
	c, err := s.EtcdClient("root")
	if err != nil {
		return EtcdMember{}, err
	}
	defer c.Close()
	var errs []error
	for _, m := range s.EtcdCluster {
		if p := s.Proc(m.Name); p == nil || !p.Running() {
			continue
		}
		st, err := c.Status(ctx, m.ClientURL)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", m.Name, err))
			continue
		}
		if st.Leader != 0 && st.Leader == st.Header.MemberId {
			return m, nil
		}
	}
	if len(errs) == 0 {
		return EtcdMember{}, errors.New("stack: no etcd member leads (an election may be under way)")
	}
	return EtcdMember{}, fmt.Errorf("stack: no etcd member leads: %w", errors.Join(errs...))
}

// EtcdEndpoints are the Corefile's variables of etcd's client URLs, one per
// member of the three the manifests run.
var EtcdEndpoints = []string{"SKYLB_ETCD_ENDPOINT", "SKYLB_ETCD_ENDPOINT_2", "SKYLB_ETCD_ENDPOINT_3"}

// EtcdEndpointVars returns the values of EtcdEndpoints for the client URLs of
// an etcd's members, in order, starting again from the first when there are
// fewer than three: one etcd is listed three times.
func EtcdEndpointVars(urls []string) map[string]string {
	vars := map[string]string{}
	for i, name := range EtcdEndpoints {
		vars[name] = urls[i%len(urls)]
	}
	return vars
}
