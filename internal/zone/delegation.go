package zone

import (
	"errors"
	"fmt"
	"io"
	"net/netip"
	"strings"
)

// Parent returns the zone a zone is delegated from: its name without the first
// label ("." for a single label).
func Parent(zone string) string {
	if _, parent, ok := strings.Cut(zone, "."); ok {
		return parent
	}
	return "."
}

// PrintDelegation writes, for each zone, the records the parent zone needs to
// delegate it to ns, as zone-file lines (NS records and their glue), followed
// by the conditional-forwarder settings of BIND, Unbound and Windows DNS as
// comments. The whole output can be pasted into, or $INCLUDEd in, the
// parent's zone file. It fails when there is no nameserver.
func PrintDelegation(w io.Writer, zones []string, ns []Nameserver) error {
	if len(ns) == 0 {
		return ErrNoNameservers
	}
	var b strings.Builder
	for i, z := range zones {
		if i > 0 {
			b.WriteString("\n")
		}
		parent := Parent(z)
		where := "the parent zone " + parent
		if parent == "." {
			where = "the root zone"
		}
		fmt.Fprintf(&b, "; Delegation of %s: add to %s.\n", z, where)
		if msg := Warning(z, ns); msg != "" {
			fmt.Fprintf(&b, "; WARNING: %s\n", msg)
		}
		for _, n := range ns {
			fmt.Fprintf(&b, "%s.\tIN\tNS\t%s.\n", z, n.Host(z))
		}
		for _, n := range ns {
			typ := "A"
			if n.Addr.Is6() {
				typ = "AAAA"
			}
			fmt.Fprintf(&b, "%s.\tIN\t%s\t%s\n", n.Host(z), typ, n.Addr)
		}
		addrs := make([]string, len(ns))
		for j, n := range ns {
			addrs[j] = n.Addr.String()
		}
		fmt.Fprintf(&b, ";\n; Or forward the zone to its nameservers (a conditional forwarder):\n")
		fmt.Fprintf(&b, ";   BIND (named.conf):\n")
		fmt.Fprintf(&b, ";     zone %q { type forward; forward only; forwarders { %s; }; };\n", z, strings.Join(addrs, "; "))
		fmt.Fprintf(&b, ";   Unbound (unbound.conf):\n")
		fmt.Fprintf(&b, ";     forward-zone:\n;       name: %q\n", z)
		for _, a := range addrs {
			fmt.Fprintf(&b, ";       forward-addr: %s\n", a)
		}
		fmt.Fprintf(&b, ";   Windows DNS (PowerShell):\n")
		fmt.Fprintf(&b, ";     Add-DnsServerConditionalForwarderZone -Name %q -MasterServers %s\n", z, strings.Join(addrs, ","))
		if parent != "." {
			child := strings.TrimSuffix(z, "."+parent)
			fmt.Fprintf(&b, "; The delegation in Windows DNS (PowerShell, on a server of %s):\n", parent)
			for _, n := range ns {
				fmt.Fprintf(&b, ";     Add-DnsServerZoneDelegation -Name %q -ChildZoneName %q -NameServer %q -IPAddress %s\n",
					parent, child, n.Host(z), n.Addr)
			}
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// ErrNoNameservers is PrintDelegation's error when there is no nameserver.
var ErrNoNameservers = errors.New("no nameservers: give --nameserver (or --nameserver-selector with a reachable cluster)")

// PrintForwarders writes, for each zone, the conditional-forwarder settings
// of the servers that forward to another port than 53 (BIND, Unbound,
// dnsmasq) for the DNS server at port of addrs: a NodePort of the nodes, when
// no nameserver answers on port 53, where a delegation, and Windows DNS,
// need it.
func PrintForwarders(w io.Writer, zones []string, addrs []netip.Addr, port int) error {
	if len(addrs) == 0 {
		return ErrNoNameservers
	}
	var b strings.Builder
	fmt.Fprintf(&b, "; No nameserver answers the zones on port 53, which a delegation (NS records) and\n")
	fmt.Fprintf(&b, "; Windows DNS need: add CoreDNS's component deploy/hostnetwork for them. Meanwhile,\n")
	fmt.Fprintf(&b, "; forward the zones to port %d of the nodes (a conditional forwarder):\n", port)
	for i, z := range zones {
		if i > 0 {
			b.WriteString(";\n")
		}
		bind, unbound, dnsmasq := make([]string, len(addrs)), make([]string, len(addrs)), make([]string, len(addrs))
		for j, a := range addrs {
			bind[j] = fmt.Sprintf("%s port %d", a, port)
			unbound[j] = fmt.Sprintf(";       forward-addr: %s@%d", a, port)
			dnsmasq[j] = fmt.Sprintf(";     server=/%s/%s#%d", z, a, port)
		}
		fmt.Fprintf(&b, ";   BIND (named.conf):\n")
		fmt.Fprintf(&b, ";     zone %q { type forward; forward only; forwarders { %s; }; };\n", z, strings.Join(bind, "; "))
		fmt.Fprintf(&b, ";   Unbound (unbound.conf):\n;     forward-zone:\n;       name: %q\n%s\n", z, strings.Join(unbound, "\n"))
		fmt.Fprintf(&b, ";   dnsmasq:\n%s\n", strings.Join(dnsmasq, "\n"))
	}
	_, err := io.WriteString(w, b.String())
	return err
}
