package publish

import (
	"errors"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
)

// IsNoSpace reports whether err is etcd refusing a write because its database
// reached --quota-backend-bytes (the NOSPACE alarm). No retry helps until an
// operator frees space and disarms the alarm, so it is counted apart from
// other failures.
func IsNoSpace(err error) bool {
	return errors.Is(err, rpctypes.ErrNoSpace)
}
