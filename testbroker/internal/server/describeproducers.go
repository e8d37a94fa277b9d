package server

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kshare/kshare/testbroker/internal/acl"
)

func init() {
	register(61, 0, 0, (*Broker).handleDescribeProducers, failedDescribeProducers, describeProducersScope)
}

// handleDescribeProducers lists each partition's active producers from its leader's log
// (log.Partition.Producers): epoch, last sequence and timestamp, the coordinator epoch of the
// last marker and the start of the ongoing transaction. As in Kafka, a partition the cluster
// does not have is UNKNOWN_TOPIC_OR_PARTITION and one this broker does not lead
// NOT_LEADER_OR_FOLLOWER.
func (b *Broker) handleDescribeProducers(cn *conn, req *kmsg.DescribeProducersRequest) kmsg.Response {
	c := b.c
	resp := req.ResponseKind().(*kmsg.DescribeProducersResponse)
	for _, rt := range req.Topics {
		t := c.meta.Topic(rt.Topic)
		st := kmsg.DescribeProducersResponseTopic{Topic: rt.Topic}
		denied := !cn.authorizeTopic(acl.OpRead, rt.Topic)
		for _, idx := range rt.Partitions {
			sp := kmsg.DescribeProducersResponseTopicPartition{Partition: idx}
			if denied {
				sp.ErrorCode = kerr.TopicAuthorizationFailed.Code
				st.Partitions = append(st.Partitions, sp)
				continue
			}
			p := c.meta.Partition(t, idx)
			if p == nil {
				sp.ErrorCode = kerr.UnknownTopicOrPartition.Code
				st.Partitions = append(st.Partitions, sp)
				continue
			}
			state := p.State()
			if b.leaderError(state, -1) != nil {
				sp.ErrorCode = kerr.NotLeaderForPartition.Code
			} else {
				for _, pi := range state.LeaderLog().Producers() {
					sp.ActiveProducers = append(sp.ActiveProducers, kmsg.DescribeProducersResponseTopicPartitionActiveProducer{
						ProducerID: pi.ProducerID, ProducerEpoch: int32(pi.ProducerEpoch), LastSequence: pi.LastSequence,
						LastTimestamp: pi.LastTimestamp, CoordinatorEpoch: pi.CoordinatorEpoch, CurrentTxnStartOffset: pi.CurrentTxnStartOffset,
					})
				}
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp
}

func failedDescribeProducers(req *kmsg.DescribeProducersRequest, code int16) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.DescribeProducersResponse)
	for _, rt := range req.Topics {
		st := kmsg.DescribeProducersResponseTopic{Topic: rt.Topic}
		for _, idx := range rt.Partitions {
			st.Partitions = append(st.Partitions, kmsg.DescribeProducersResponseTopicPartition{Partition: idx, ErrorCode: code})
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp
}

func describeProducersScope(c *Cluster, req *kmsg.DescribeProducersRequest) (topics, groups []string) {
	s := scope{c: c}
	for _, t := range req.Topics {
		s.topic(t.Topic)
	}
	return s.result()
}
