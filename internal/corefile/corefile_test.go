package corefile

import (
	"net/netip"
	"os"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// blockLines returns the lines of text's server blocks, without comments.
func blockLines(text string) []string {
	var out []string
	for l := range strings.SplitSeq(text, "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
			out = append(out, l)
		}
	}
	return out
}

// The shipped example (coredns/internal.view.example) is what skylb writes
// for the same view: the one documents the other.
func TestBlocksMatchTheShippedExample(t *testing.T) {
	example, err := os.ReadFile("../../coredns/internal.view.example")
	if err != nil {
		t.Fatal(err)
	}
	got := Blocks("/skydns", []string{"example.org"}, []View{{Name: "internal", Networks: []netip.Prefix{
		netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("192.168.0.0/16")}}})
	if g, w := blockLines(got), blockLines(string(example)); !slices.Equal(g, w) {
		t.Errorf("skylb writes\n%s\nthe example holds\n%s", strings.Join(g, "\n"), strings.Join(w, "\n"))
	}
}

func TestBlocks(t *testing.T) {
	got := Blocks("/dns/", []string{"a.example.org", "b.example.org"}, []View{
		{Name: "zone-a", Zone: "a", Networks: []netip.Prefix{netip.MustParsePrefix("2001:db8::/64")}},
		{Name: "zone-b", Zone: "b"},
		{Name: "lab", Networks: []netip.Prefix{netip.MustParsePrefix("127.0.0.2/32")}},
	})
	for _, want := range []string{
		"# View zone-a: clients of the nodes of topology zone a.",
		"view zone-a {\n\t\texpr incidr(client_ip(), '2001:db8::/64')\n",
		"path /dns-zone-a\n",
		"\na.example.org b.example.org {\n",
		"# View zone-b: no client networks (the nodes of topology zone b), so no block",
		"view lab {\n\t\texpr incidr(client_ip(), '127.0.0.2/32')\n",
		"path /dns-lab\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("no %q in\n%s", want, got)
		}
	}
	if strings.Contains(got, "view zone-b") || strings.Index(got, "view zone-a") > strings.Index(got, "view lab") {
		t.Errorf("want zone-a's block, then lab's, and none for zone-b:\n%s", got)
	}
	if got := Blocks("/skydns", []string{"example.org"}, nil); len(blockLines(got)) != 0 {
		t.Errorf("no views: %q, want comments only", got)
	}
}

func TestZoneNetworks(t *testing.T) {
	node := func(name, zone string, cidrs []string, addrs ...corev1.NodeAddress) *corev1.Node {
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{}}}
		if zone != "" {
			n.Labels[corev1.LabelTopologyZone] = zone
		}
		n.Spec.PodCIDRs = cidrs
		n.Status.Addresses = addrs
		return n
	}
	internal := func(a string) corev1.NodeAddress { return corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: a} }
	nodes := []*corev1.Node{
		node("n2", "a", []string{"10.244.2.0/24", "fd00:2::/64"}, internal("192.0.2.12"), internal("2001:db8::12"),
			corev1.NodeAddress{Type: corev1.NodeHostName, Address: "n2"}),
		node("n1", "a", []string{"10.244.1.0/24"}, internal("192.0.2.11"),
			corev1.NodeAddress{Type: corev1.NodeExternalIP, Address: "198.51.100.11"}),
		node("n3", "b", []string{"10.244.3.0/24"}, internal("192.0.2.13")),
		node("n4", "", nil, internal("192.0.2.14")),
		node("n5", "a", []string{"not a cidr"}, internal("192.0.2.11")),
	}
	var got []string
	for _, p := range ZoneNetworks(nodes, "a") {
		got = append(got, p.String())
	}
	want := []string{"10.244.1.0/24", "10.244.2.0/24", "192.0.2.11/32", "192.0.2.12/32", "198.51.100.11/32",
		"2001:db8::12/128", "fd00:2::/64"}
	if !slices.Equal(got, want) {
		t.Errorf("zone a: %v, want %v", got, want)
	}
	if got := ZoneNetworks(nodes, "c"); len(got) != 0 {
		t.Errorf("a zone without nodes: %v, want none", got)
	}
}

func TestAggregate(t *testing.T) {
	parse := func(ss ...string) []netip.Prefix {
		var out []netip.Prefix
		for _, s := range ss {
			out = append(out, netip.MustParsePrefix(s))
		}
		return out
	}
	for _, tc := range []struct{ in, want []string }{
		{nil, nil},
		{[]string{"192.0.2.1/32"}, []string{"192.0.2.1/32"}},
		// Four consecutive node addresses are one network; a fifth stays.
		{[]string{"192.0.2.7/32", "192.0.2.4/32", "192.0.2.5/32", "192.0.2.6/32", "192.0.2.8/32"}, []string{"192.0.2.4/30", "192.0.2.8/32"}},
		// Not halves of one network: 192.0.2.1 and .2 stay apart.
		{[]string{"192.0.2.1/32", "192.0.2.2/32"}, []string{"192.0.2.1/32", "192.0.2.2/32"}},
		// A node inside a pod network, duplicates, an unmasked network.
		{[]string{"10.244.1.7/24", "10.244.1.3/32", "10.244.1.0/24", "10.244.0.0/24"}, []string{"10.244.0.0/23"}},
		{[]string{"2001:db8::/65", "2001:db8::8000:0:0:0/65", "2001:db8::1/128"}, []string{"2001:db8::/64"}},
		// The families never merge.
		{[]string{"0.0.0.0/1", "128.0.0.0/1", "::/1", "8000::/1"}, []string{"0.0.0.0/0", "::/0"}},
	} {
		var got []string
		for _, p := range Aggregate(parse(tc.in...)) {
			got = append(got, p.String())
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("Aggregate(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
