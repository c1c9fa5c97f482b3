package skydns

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash/maphash"
	"net/netip"
	"strconv"
	"strings"

	"github.com/skylb/skylb/internal/dnsname"
)

// Type is the DNS type a record is served as. CoreDNS derives it from the value's
// host field: an IPv4 address is an A record, an IPv6 address AAAA, a name CNAME,
// or PTR at the reverse name of an address (10.2.0.192.in-addr.arpa). A record
// with a text and no host is TXT, which CoreDNS reads for TXT queries only.
// A record with a port is stored for SRV queries: skylb gives it a host that
// is a name, which CoreDNS serves as the SRV target. A name that is the name
// queried, or lies beneath it, CoreDNS takes for a CNAME loop and serves
// nothing: that record is of type None.
type Type string

// The record types skylb writes.
const (
	A     Type = "A"
	AAAA  Type = "AAAA"
	CNAME Type = "CNAME"
	SRV   Type = "SRV"
	PTR   Type = "PTR"
	TXT   Type = "TXT"
	// None is a record CoreDNS serves as nothing, such as the apex guard: its
	// host is the zone it answers for.
	None Type = "none"
)

// hashLength is the number of hex digits of the content hash in a key label.
const hashLength = 12

// MaxOwnerLength is the longest owner id that leaves room in a key label for the hash.
const MaxOwnerLength = 63 - 1 - hashLength

// Record is one DNS record of a name, as skylb publishes it.
type Record struct {
	// Name is the record's owner name, normalised, without trailing dot:
	// the stored name, or for an SRV record _<service>._<protocol>.<stored
	// name>, kept with the records of the name it points to (see HeldBy).
	Name   string
	Host   string // IP address or target name
	Port   int    // SRV port, 0 otherwise
	Text   string // TXT text, with an empty Host (see Type)
	TTL    uint32
	Source string // the object the record comes from, e.g. "service/default/web"
	// Label, when set, is the last segment of the record's key instead of
	// <owner>-<hash>. CoreDNS names a zone's nameservers after it: the key
	// .../dns/ns/ns1 serves the nameserver ns1.ns.dns.<zone>. It must be a DNS
	// label; ownership is still told by the value's owner field.
	Label string
}

// AtName reports whether the records of a stored name are stored at the
// name's own path rather than beneath it: the reverse name of an address,
// whose PTR query CoreDNS answers from that one key alone
// (/skydns/arpa/in-addr/192/0/2/10 for 192.0.2.10). Such a key holds one
// record, whoever writes it: ownership is told by the value's owner field.
func AtName(name string) bool {
	if !strings.HasSuffix(name, ".arpa") {
		return false
	}
	_, ok := dnsname.ReverseAddr(name)
	return ok
}

// HeldBy returns the stored name whose records include those of name: for an
// SRV owner name, _<service>._<protocol>.<name>, the name beneath which they
// are stored and whose claim holds them (their target, which they follow);
// any other name is its own. No hostname has a label beginning with "_", so
// the first two labels tell them apart.
func HeldBy(name string) string {
	if !strings.HasPrefix(name, "_") {
		return name
	}
	_, rest, ok := strings.Cut(name, ".")
	if !ok || !strings.HasPrefix(rest, "_") {
		return name
	}
	if _, rest, ok = strings.Cut(rest, "."); !ok || rest == "" {
		return name
	}
	return rest
}

// Type returns the DNS type CoreDNS serves the record as.
func (r Record) Type() Type {
	addr, err := netip.ParseAddr(r.Host)
	switch {
	case r.Port != 0:
		return SRV
	case err != nil && r.Text != "":
		return TXT
	case err != nil && AtName(r.Name):
		return PTR
	case err != nil && loops(Queried(r.Name), r.Host):
		return None
	case err != nil:
		return CNAME
	case addr.Unmap().Is4():
		// CoreDNS serves an IPv4-mapped IPv6 address as A, like any IPv4 address.
		return A
	default:
		return AAAA
	}
}

// digestSeed seeds Digest: digests are compared within one process only.
var digestSeed = maphash.MakeSeed()

// Digest returns a hash of the record's name, host, port and text. Summed over
// the records of one object it identifies them whatever their order: what
// the object publishes is unchanged when the sum is (see
// publish.Publisher.Loaded).
func (r Record) Digest() uint64 {
	var h maphash.Hash
	h.SetSeed(digestSeed)
	h.WriteString(r.Name)
	h.WriteByte(0)
	h.WriteString(r.Host)
	h.WriteByte(0)
	var port [8]byte
	binary.LittleEndian.PutUint64(port[:], uint64(r.Port))
	h.Write(port[:])
	h.WriteString(r.Text)
	return h.Sum64()
}

// String formats the record as a zone-file line, for logs.
func (r Record) String() string {
	if r.Port != 0 {
		return fmt.Sprintf("%s %d %s %d %s", r.Name, r.TTL, r.Type(), r.Port, r.Host)
	}
	return fmt.Sprintf("%s %d %s %s", r.Name, r.TTL, r.Type(), r.Data())
}

// Data returns what the record answers, for logs and listings: its text,
// quoted, for a TXT record, else its host.
func (r Record) Data() string {
	if r.Text != "" && r.Type() == TXT {
		return strconv.Quote(r.Text)
	}
	return r.Host
}

// Value is the JSON stored in etcd. The first fields are those of CoreDNS's
// msg.Service; Owner and Source are skylb's and ignored by CoreDNS.
type Value struct {
	Host   string `json:"host"`
	Port   int    `json:"port,omitempty"`
	Text   string `json:"text,omitempty"`
	TTL    uint32 `json:"ttl,omitempty"`
	Owner  string `json:"owner,omitempty"`
	Source string `json:"source,omitempty"`
}

// Path returns the etcd path of a name under prefix, without a trailing slash:
// Path("/skydns", "web.example.org") is "/skydns/org/example/web".
func Path(prefix, name string) string {
	labels := strings.Split(name, ".")
	var b strings.Builder
	b.Grow(len(prefix) + len(name) + 1)
	b.WriteString(strings.TrimSuffix(prefix, "/"))
	for i := len(labels) - 1; i >= 0; i-- {
		b.WriteByte('/')
		b.WriteString(labels[i])
	}
	return b.String()
}

// Label returns the last key segment of a record written by owner: the record's
// own Label when it has one, else the owner id, a hyphen and a hash of what
// makes the record distinct within its name; empty for a record stored at
// its name (see AtName).
func Label(owner string, r Record) string {
	if AtName(r.Name) {
		return ""
	}
	if r.Label != "" {
		return r.Label
	}
	h := sha256.New()
	h.Write([]byte(r.Host))
	if r.Port != 0 {
		h.Write([]byte{0})
		h.Write([]byte(strconv.Itoa(r.Port)))
	}
	if r.Text != "" {
		// No host or port holds a NUL followed by a letter.
		h.Write([]byte("\x00text\x00"))
		h.Write([]byte(r.Text))
	}
	return owner + "-" + hex.EncodeToString(h.Sum(nil))[:hashLength]
}

// Key returns the etcd key of a record written by owner under prefix.
func Key(prefix, owner string, r Record) string {
	if label := Label(owner, r); label != "" {
		return Path(prefix, r.Name) + "/" + label
	}
	return Path(prefix, r.Name)
}

// Encode returns the JSON value of a record written by owner.
func Encode(owner string, r Record) []byte {
	b, err := json.Marshal(Value{Host: r.Host, Port: r.Port, Text: r.Text, TTL: r.TTL, Owner: owner, Source: r.Source})
	if err != nil {
		// Marshalling a struct of strings and integers cannot fail.
		panic(fmt.Sprintf("encode %s: %v", r, err))
	}
	return b
}

// Record returns the record of a value stored at a record's name, as
// Encode would write it again, but for its label.
func (v Value) Record(name string) Record {
	return Record{Name: name, Host: v.Host, Port: v.Port, Text: v.Text, TTL: v.TTL, Source: v.Source}
}

// Decode parses a stored value. It fails on anything that is not a JSON object.
func Decode(b []byte) (Value, error) {
	var v *Value
	if err := json.Unmarshal(b, &v); err != nil {
		return Value{}, fmt.Errorf("decode value: %w", err)
	}
	if v == nil {
		return Value{}, errors.New("decode value: null is not an object")
	}
	return *v, nil
}

// SplitKey splits a key under prefix into the stored name and the record label:
// SplitKey("/skydns", "/skydns/org/example/web/x1") is ("web.example.org", "x1").
// A key at the reverse name of an address is that name with an empty label
// (see AtName). It reports false for keys outside the prefix or without a name.
func SplitKey(prefix, key string) (name, label string, ok bool) {
	rest, found := strings.CutPrefix(key, strings.TrimSuffix(prefix, "/")+"/")
	if !found {
		return "", "", false
	}
	if strings.HasPrefix(rest, "arpa/") {
		if whole := reversed(rest); AtName(whole) {
			return whole, "", true
		}
	}
	i := strings.LastIndexByte(rest, '/')
	if i <= 0 || i == len(rest)-1 {
		return "", "", false
	}
	return reversed(rest[:i]), rest[i+1:], true
}

// reversed returns the name of a path of labels in reverse order.
func reversed(path string) string {
	segs := strings.Split(path, "/")
	for l, r := 0, len(segs)-1; l < r; l, r = l+1, r-1 {
		segs[l], segs[r] = segs[r], segs[l]
	}
	return strings.Join(segs, ".")
}

// ApexName is the stored name of a zone's apex records: CoreDNS answers a query
// for the zone itself from the keys beneath dns/apex.
func ApexName(zone string) string { return apexPrefix + zone }

const apexPrefix = "apex.dns."

// Queried returns the name whose queries a stored name answers: the zone for
// its apex records (see ApexName), else the stored name itself.
func Queried(stored string) string {
	if zone, ok := strings.CutPrefix(stored, apexPrefix); ok {
		return zone
	}
	return stored
}

// loops reports whether CoreDNS skips a record of host answering name as a
// CNAME loop: host is name or lies beneath it.
func loops(name, host string) bool {
	host = strings.ToLower(strings.TrimSuffix(host, "."))
	return host == name || strings.HasSuffix(host, "."+name)
}
