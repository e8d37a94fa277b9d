package main

import (
	"context"
	"fmt"
	"io"

	"github.com/kshare/kshare/errors"
	"github.com/kshare/kshare/shareconsumer"
)

// createGroup creates the share group group with shareconsumer.CreateGroup and writes "Share
// group 'G' created.", or "Error: Group 'G' is not a share group." when group names a group of
// another type, or "Error: " and the error otherwise; it reports whether the group is a share
// group now. --timeout bounds the whole of it (a join and a leave).
func createGroup(ctx context.Context, w io.Writer, conn connection, o options) bool {
	group := o.group
	ctx, cancel := o.requestCtx(ctx)
	defer cancel()
	err := o.timedOut(shareconsumer.CreateGroup(ctx, group, conn.opts()...))
	switch {
	case err == nil:
		fmt.Fprintf(w, "Share group '%s' created.\n", group)
		return true
	case errors.Is(err, errors.ErrInconsistentGroupType):
		fmt.Fprintf(w, "Error: Group '%s' is not a share group.\n", group)
	default:
		fmt.Fprintf(w, "Error: %v\n", err)
	}
	return false
}
