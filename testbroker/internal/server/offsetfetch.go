package server

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kshare/kshare/testbroker/internal/acl"
	"github.com/kshare/kshare/testbroker/internal/group"
)

func init() {
	register(9, 0, 9, (*Broker).handleOffsetFetch, failedOffsetFetch, offsetFetchScope)
}

// handleOffsetFetch runs an OffsetFetch (v0-9; group.Coordinator.FetchOffsets has the rules):
// one group before v8, a batch of groups from v8, each with its member (v9) and its topics
// (none for every committed offset, v2+). Before v8 a group's error is the top-level code (and,
// before v2, every partition's); from v8 it is the group's. A group this broker does not
// coordinate is NOT_COORDINATOR. A partition with a transactional offset pending answers
// UNSTABLE_OFFSET_COMMIT to a fetch with RequireStable (v7+).
func (b *Broker) handleOffsetFetch(cn *conn, req *kmsg.OffsetFetchRequest) kmsg.Response {
	c := b.c
	resp := req.ResponseKind().(*kmsg.OffsetFetchResponse)
	fetch := func(id string, member group.OffsetCommitMember, topics []group.OffsetFetchTopic) ([]group.FetchedTopic, error) {
		if !cn.authorizeGroup(acl.OpDescribe, id) {
			return nil, kerr.GroupAuthorizationFailed
		}
		if c.coordinatorFor(id) != b.id {
			return nil, kerr.NotCoordinator
		}
		fetched, err := c.groups.FetchOffsets(group.OffsetFetch{GroupID: id, Member: member, Topics: topics, RequireStable: req.RequireStable})
		return cn.authorizeFetchedOffsets(fetched, topics == nil), err
	}
	noMember := group.OffsetCommitMember{GenerationIDOrMemberEpoch: -1, Version: req.Version}
	if req.Version < 8 {
		var topics []group.OffsetFetchTopic
		if req.Topics != nil {
			topics = []group.OffsetFetchTopic{}
			for _, t := range req.Topics {
				topics = append(topics, group.OffsetFetchTopic{Name: t.Topic, Partitions: t.Partitions})
			}
		}
		fetched, err := fetch(req.Group, noMember, topics)
		if err != nil {
			if req.Version < 2 {
				return failedOffsetFetch(req, codeOf(err))
			}
			resp.ErrorCode = codeOf(err)
			return resp
		}
		for _, t := range fetched {
			rt := kmsg.NewOffsetFetchResponseTopic()
			rt.Topic = t.Name
			for _, p := range t.Partitions {
				rp := kmsg.NewOffsetFetchResponseTopicPartition()
				rp.Partition, rp.Offset, rp.LeaderEpoch, rp.ErrorCode = p.Partition, p.Offset, p.LeaderEpoch, codeOf(p.Err)
				rp.Metadata = &p.Metadata
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp
	}
	for _, g := range req.Groups {
		member := noMember
		if g.MemberID != nil {
			member.MemberID, member.GenerationIDOrMemberEpoch = *g.MemberID, g.MemberEpoch
		}
		var topics []group.OffsetFetchTopic
		if g.Topics != nil {
			topics = []group.OffsetFetchTopic{}
			for _, t := range g.Topics {
				topics = append(topics, group.OffsetFetchTopic{Name: t.Topic, Partitions: t.Partitions})
			}
		}
		rg := kmsg.NewOffsetFetchResponseGroup()
		rg.Group = g.Group
		fetched, err := fetch(g.Group, member, topics)
		if err != nil {
			rg.ErrorCode = codeOf(err)
			resp.Groups = append(resp.Groups, rg)
			continue
		}
		for _, t := range fetched {
			rt := kmsg.NewOffsetFetchResponseGroupTopic()
			rt.Topic = t.Name
			for _, p := range t.Partitions {
				rp := kmsg.NewOffsetFetchResponseGroupTopicPartition()
				rp.Partition, rp.Offset, rp.LeaderEpoch, rp.ErrorCode = p.Partition, p.Offset, p.LeaderEpoch, codeOf(p.Err)
				rp.Metadata = &p.Metadata
				rt.Partitions = append(rt.Partitions, rp)
			}
			rg.Topics = append(rg.Topics, rt)
		}
		resp.Groups = append(resp.Groups, rg)
	}
	return resp
}

// failedOffsetFetch is an OffsetFetch answered with code: top level and for every partition
// asked for before v8, per group from v8.
func failedOffsetFetch(req *kmsg.OffsetFetchRequest, code int16) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.OffsetFetchResponse)
	resp.ErrorCode = code // v8+ do not encode it; set so that every error field carries code
	if req.Version >= 8 {
		for _, g := range req.Groups {
			rg := kmsg.NewOffsetFetchResponseGroup()
			rg.Group, rg.ErrorCode = g.Group, code
			resp.Groups = append(resp.Groups, rg)
		}
		return resp
	}
	for _, t := range req.Topics {
		rt := kmsg.NewOffsetFetchResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewOffsetFetchResponseTopicPartition()
			rp.Partition, rp.Offset, rp.LeaderEpoch, rp.ErrorCode = p, -1, -1, code
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

func offsetFetchScope(_ *Cluster, req *kmsg.OffsetFetchRequest) (topics, groups []string) {
	if req.Version < 8 {
		for _, t := range req.Topics {
			topics = append(topics, t.Topic)
		}
		return topics, []string{req.Group}
	}
	for _, g := range req.Groups {
		groups = append(groups, g.Group)
		for _, t := range g.Topics {
			topics = append(topics, t.Topic)
		}
	}
	return topics, groups
}
