package main

import (
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kshare/kshare/errors"
)

// deleteGroups runs --delete for every --group, or with --all-groups for every share group and every
// consumer group (type consumer, or classic with protocol type consumer or none), and returns
// the exit code: 0, as both of Kafka's tools, also when a group could not be deleted. Share
// groups (and a group no broker lists) are deleted as kafka-share-groups.sh does, each checked
// against the listing first; consumer and classic groups as kafka-consumer-groups.sh does,
// with DeleteGroups alone.
func deleteGroups(ctx context.Context, stdout, stderr io.Writer, cl *kgo.Client, o options) int {
	adm := kadm.NewClient(cl)
	listed, err := listAllGroups(ctx, adm, o)
	if err != nil {
		return shareTool.fail(stdout, stderr, err)
	}
	var share, consumer []string
	if o.allGroups {
		for _, g := range listed.Sorted() {
			switch {
			case isShareGroup(g):
				share = append(share, g.Group)
			case isConsumerGroup(g):
				consumer = append(consumer, g.Group)
			}
		}
	} else {
		for _, id := range o.groups {
			if g, ok := listed[id]; toolOf(g, ok, false) == consumerTool {
				consumer = append(consumer, id)
			} else {
				share = append(share, id)
			}
		}
	}
	if len(share) > 0 || len(consumer) == 0 {
		failed := map[string]string{}
		var todo []string
		for _, id := range share {
			g, ok := listed[id]
			switch {
			case !ok || !isShareGroup(g):
				failed[id] = "org.apache.kafka.common.errors.GroupIdNotFoundException: Group '" + id + "' is not a share group."
			case g.State == "Dead":
				failed[id] = "java.lang.IllegalStateException: Share group '" + id + "' group state is DEAD."
			case g.State != "Empty":
				failed[id] = "org.apache.kafka.common.errors.GroupNotEmptyException: Share group '" + id + "' is not EMPTY."
			default:
				todo = append(todo, id)
			}
		}
		if err := deleteListedGroups(ctx, stdout, adm, o, shareTool, todo, failed); err != nil {
			return shareTool.fail(stdout, stderr, err)
		}
	}
	if len(consumer) > 0 {
		if err := deleteListedGroups(ctx, stdout, adm, o, consumerTool, consumer, map[string]string{}); err != nil {
			return consumerTool.fail(stdout, stderr, err)
		}
	}
	return 0
}

// deleteListedGroups deletes groups (DeleteGroups) and writes the outcome as tool does, counting
// those in failed (group to the exception, as Java prints it) as not deleted.
func deleteListedGroups(ctx context.Context, w io.Writer, adm *kadm.Client, o options, tool groupTool, groups []string, failed map[string]string) error {
	var deleted []string
	if len(groups) > 0 {
		rctx, cancel := o.requestCtx(ctx)
		resp, err := adm.DeleteGroups(rctx, groups...)
		cancel()
		if err != nil {
			return o.timedOut(err)
		}
		for _, g := range groups {
			r, ok := resp[g]
			switch {
			case !ok:
				failed[g] = "java.lang.IllegalArgumentException: DeleteGroups answered without group " + g
			case r.Err != nil:
				err := r.Err
				if r.ErrMessage != "" {
					err = &errors.KafkaError{Code: errorCode(r.Err), Message: r.ErrMessage}
				}
				failed[g] = javaString(err)
			default:
				deleted = append(deleted, g)
			}
		}
	}
	quoted := func(ids []string) string {
		q := make([]string, len(ids))
		for i, id := range ids {
			q[i] = "'" + id + "'"
		}
		return strings.Join(q, ", ")
	}
	if len(failed) == 0 {
		fmt.Fprintf(w, "Deletion of requested %s groups (%s) was successful.\n", tool.name(), quoted(deleted))
		return nil
	}
	printError(w, "Deletion of some "+tool.name()+" groups failed:")
	for _, g := range slices.Sorted(maps.Keys(failed)) {
		fmt.Fprintf(w, "* Group '%s' could not be deleted due to: %s\n", g, failed[g])
	}
	if len(deleted) > 0 {
		fmt.Fprintf(w, "\nThese %s groups were deleted successfully: %s\n", tool.name(), quoted(deleted))
	}
	return nil
}
