package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"sigs.k8s.io/yaml"

	"github.com/skylb/skylb/internal/etcdclient"
	"github.com/skylb/skylb/internal/inventory"
	"github.com/skylb/skylb/internal/source"
)

// recordsFlags are the flags of skylb run that skylb records reads.
var recordsFlags = []string{"etcd-endpoints", "etcd-ca-file", "etcd-cert-file", "etcd-key-file", "etcd-server-name",
	"etcd-prefix", "claim-prefix", "owner-id", "view", "view-zone"}

// outputFlag defines skylb records' -o.
func outputFlag(fs *pflag.FlagSet, o *options) {
	fs.StringVarP(&o.output, "output", "o", "table", "output format: table, json or yaml (stable field names)")
}

// records runs "skylb records": it prints what the etcd holds under
// --etcd-prefix, the prefix of each view (--view, --view-zone) and --claim-prefix, by name and
// owner. It only reads.
func records(o *options, stdout, stderr io.Writer) int {
	if o.output != "table" && o.output != "json" && o.output != "yaml" {
		fmt.Fprintln(stderr, "skylb:", withEnv(fmt.Errorf("--output: %q is none of table, json and yaml", o.output), o.fromEnv))
		return 2
	}
	// Only their names count here: the address source is skylb run's.
	declared, err := o.viewsConfig(source.ModeAuto)
	if err != nil {
		fmt.Fprintln(stderr, "skylb:", withEnv(err, o.fromEnv))
		return 2
	}
	var views []string
	for _, v := range declared {
		views = append(views, v.Name)
	}
	log, err := newLogger("warn", "text")
	if err != nil {
		fmt.Fprintln(stderr, "skylb:", err)
		return 2
	}
	// A one-off command does not wait for a missing file: it says which.
	if err := o.etcdFiles(); err != nil {
		fmt.Fprintln(stderr, "skylb:", withEnv(err, o.fromEnv))
		return 2
	}
	etcdCfg := o.etcd
	etcdCfg.Log = log
	c, err := etcdclient.New(etcdCfg)
	if err != nil {
		fmt.Fprintln(stderr, "skylb: etcd client:", err)
		return 1
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	inv, err := inventory.Read(ctx, c, strings.TrimRight(o.prefix, "/"), strings.TrimRight(o.claimPrefix, "/"), views...)
	if err == nil {
		err = writeReport(stdout, inv.Report(o.owner), o.output)
	}
	if err != nil {
		fmt.Fprintln(stderr, "skylb:", err)
		return 1
	}
	return 0
}

// writeReport prints the report in the format: table, json or yaml.
func writeReport(w io.Writer, r inventory.Report, format string) error {
	if r.Records == nil {
		r.Records = []inventory.Entry{}
	}
	switch format {
	case "json":
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(r)
	case "yaml":
		b, err := yaml.Marshal(r)
		if err != nil {
			return err
		}
		_, err = w.Write(b)
		return err
	}
	return r.Write(w)
}
