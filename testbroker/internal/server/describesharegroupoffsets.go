package server

import (
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kshare/kshare/testbroker/internal/acl"
	"github.com/kshare/kshare/testbroker/internal/metadata"
	"github.com/kshare/kshare/testbroker/internal/share"
)

func init() {
	register(90, 0, 1, (*Broker).handleDescribeShareGroupOffsets, failedDescribeShareGroupOffsets, describeShareGroupOffsetsScope)
}

// handleDescribeShareGroupOffsets answers DescribeShareGroupOffsets v0-1 per group, in request
// order, as Kafka's group coordinator does (GroupCoordinatorService.describeShareGroupOffsets
// and describeShareGroupAllOffsets):
//
//   - A group this broker does not coordinate is NOT_COORDINATOR with Kafka's default message.
//     (Kafka asks the share coordinator directly when topics are named, from any broker; admin
//     clients always ask the coordinator.)
//   - Named topics: a topic that does not exist is listed after the others with a zero topic id
//     and StartOffset -1 for each requested partition. For an existing topic each requested
//     partition gets its share-partition start offset (SPSO), the partition's leader epoch and,
//     from v1, its lag (the high watermark minus the SPSO minus the records at or after the
//     SPSO that are done with); a partition the group has no share state for gets StartOffset
//     -1, LeaderEpoch 0 and Lag -1.
//   - Null topics: every partition the group has share state for, by topic name then partition.
//   - The group is not looked up: an unknown group, or a group of another type, simply has no
//     share state, as with Kafka.
//
// A share partition's state exists from the group's first ShareFetch on it (Kafka initializes
// it when a member is assigned the partition; this cluster does when it is first fetched).
func (b *Broker) handleDescribeShareGroupOffsets(cn *conn, req *kmsg.DescribeShareGroupOffsetsRequest) kmsg.Response {
	c := b.c
	resp := req.ResponseKind().(*kmsg.DescribeShareGroupOffsetsResponse)
	for _, g := range req.Groups {
		rg := kmsg.NewDescribeShareGroupOffsetsResponseGroup()
		rg.GroupID = g.GroupID
		var denied []kmsg.DescribeShareGroupOffsetsRequestGroupTopic
		switch {
		case !cn.authorizeGroup(acl.OpDescribe, g.GroupID):
			rg.ErrorCode, rg.ErrorMessage = kerr.GroupAuthorizationFailed.Code, &msgGroupAuthorizationFailed
		case c.coordinatorFor(g.GroupID) != b.id:
			rg.ErrorCode, rg.ErrorMessage = kerr.NotCoordinator.Code, &kerr.NotCoordinator.Description
		case g.Topics == nil:
			rg.Topics, _ = splitTopics(cn, acl.OpDescribe, c.allShareOffsets(g.GroupID),
				func(t *kmsg.DescribeShareGroupOffsetsResponseGroupTopic) string { return t.Topic })
		default:
			g.Topics, denied = splitTopics(cn, acl.OpDescribe, g.Topics, func(t *kmsg.DescribeShareGroupOffsetsRequestGroupTopic) string { return t.Topic })
			rg.Topics = c.shareOffsets(g.GroupID, g.Topics)
		}
		for _, t := range denied {
			rt := kmsg.NewDescribeShareGroupOffsetsResponseGroupTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewDescribeShareGroupOffsetsResponseGroupTopicPartition()
				rp.Partition, rp.StartOffset = p, -1
				rp.ErrorCode, rp.ErrorMessage = kerr.TopicAuthorizationFailed.Code, &msgTopicAuthorizationFailed
				rt.Partitions = append(rt.Partitions, rp)
			}
			rg.Topics = append(rg.Topics, rt)
		}
		resp.Groups = append(resp.Groups, rg)
	}
	return resp
}

// shareOffsets describes the requested partitions of the named topics.
func (c *Cluster) shareOffsets(group string, topics []kmsg.DescribeShareGroupOffsetsRequestGroupTopic) []kmsg.DescribeShareGroupOffsetsResponseGroupTopic {
	var known, unknown []kmsg.DescribeShareGroupOffsetsResponseGroupTopic
	for _, rt := range topics {
		out := kmsg.NewDescribeShareGroupOffsetsResponseGroupTopic()
		out.Topic = rt.Topic
		t := c.meta.Topic(rt.Topic)
		for _, idx := range rt.Partitions {
			rp := kmsg.NewDescribeShareGroupOffsetsResponseGroupTopicPartition()
			rp.Partition, rp.StartOffset = idx, -1
			if t != nil {
				c.describeSharePartition(&rp, group, t, idx)
			}
			out.Partitions = append(out.Partitions, rp)
		}
		if t == nil {
			unknown = append(unknown, out)
			continue
		}
		out.TopicID = t.ID
		known = append(known, out)
	}
	return append(known, unknown...)
}

// allShareOffsets describes every partition the group has share state for.
func (c *Cluster) allShareOffsets(group string) []kmsg.DescribeShareGroupOffsetsResponseGroupTopic {
	out := []kmsg.DescribeShareGroupOffsetsResponseGroupTopic{}
	for _, k := range c.shares.GroupPartitions(group) {
		t := c.meta.TopicByID(k.Topic)
		if t == nil {
			continue
		}
		i := slices.IndexFunc(out, func(rt kmsg.DescribeShareGroupOffsetsResponseGroupTopic) bool { return rt.TopicID == k.Topic })
		if i < 0 {
			rt := kmsg.NewDescribeShareGroupOffsetsResponseGroupTopic()
			rt.Topic, rt.TopicID = t.Name, t.ID
			out = append(out, rt)
			i = len(out) - 1
		}
		rp := kmsg.NewDescribeShareGroupOffsetsResponseGroupTopicPartition()
		rp.Partition, rp.StartOffset = k.Partition, -1
		c.describeSharePartition(&rp, group, t, k.Partition)
		out[i].Partitions = append(out[i].Partitions, rp)
	}
	slices.SortFunc(out, func(a, b kmsg.DescribeShareGroupOffsetsResponseGroupTopic) int {
		return strings.Compare(a.Topic, b.Topic)
	})
	return out
}

// describeSharePartition fills rp from the group's share partition of t's partition idx, if any.
func (c *Cluster) describeSharePartition(rp *kmsg.DescribeShareGroupOffsetsResponseGroupTopicPartition, group string, t *metadata.Topic, idx int32) {
	sp := c.shares.Get(group, share.TopicPartition{Topic: t.ID, Partition: idx})
	p := c.meta.Partition(t, idx)
	if sp == nil || p == nil {
		return
	}
	rp.StartOffset, rp.LeaderEpoch, rp.Lag = sp.StartOffset(), p.State().LeaderEpoch, sp.Lag()
}

func failedDescribeShareGroupOffsets(r *kmsg.DescribeShareGroupOffsetsRequest, code int16) kmsg.Response {
	resp := kmsg.NewPtrDescribeShareGroupOffsetsResponse()
	for _, g := range r.Groups {
		rg := kmsg.DescribeShareGroupOffsetsResponseGroup{GroupID: g.GroupID, ErrorCode: code}
		for _, t := range g.Topics {
			rt := kmsg.DescribeShareGroupOffsetsResponseGroupTopic{Topic: t.Topic}
			for _, p := range t.Partitions {
				rp := kmsg.NewDescribeShareGroupOffsetsResponseGroupTopicPartition()
				rp.Partition, rp.ErrorCode, rp.StartOffset, rp.LeaderEpoch = p, code, -1, -1
				rt.Partitions = append(rt.Partitions, rp)
			}
			rg.Topics = append(rg.Topics, rt)
		}
		resp.Groups = append(resp.Groups, rg)
	}
	return resp
}

func describeShareGroupOffsetsScope(c *Cluster, r *kmsg.DescribeShareGroupOffsetsRequest) (topics, groups []string) {
	s := scope{c: c}
	for _, g := range r.Groups {
		s.group(g.GroupID)
		for _, t := range g.Topics {
			s.topic(t.Topic)
		}
	}
	return s.result()
}
