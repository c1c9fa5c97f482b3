package zone

import (
	"errors"
	"fmt"
	"io"
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
		return errors.New("no nameservers: give --nameserver (or --nameserver-selector with a reachable cluster)")
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
