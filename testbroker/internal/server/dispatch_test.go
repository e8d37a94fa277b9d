package server

import (
	"encoding/base64"
	"reflect"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kshare/kshare/testbroker/internal/metadata"
)

// errorCodeFields returns the value of every int16 field whose name ends in ErrorCode, anywhere
// in v (nested structs, slices, pointers).
func errorCodeFields(v reflect.Value, name string, out map[string][]int16) {
	switch v.Kind() {
	case reflect.Pointer:
		if !v.IsNil() {
			errorCodeFields(v.Elem(), name, out)
		}
	case reflect.Slice:
		for i := range v.Len() {
			errorCodeFields(v.Index(i), name, out)
		}
	case reflect.Struct:
		for i := range v.NumField() {
			f := v.Type().Field(i)
			if f.Type.Kind() == reflect.Int16 && strings.HasSuffix(f.Name, "ErrorCode") {
				out[name+"."+f.Name] = append(out[name+"."+f.Name], int16(v.Field(i).Int()))
				continue
			}
			errorCodeFields(v.Field(i), name+"."+f.Name, out)
		}
	}
}

// TestFailEveryVersion builds the failure response to a default request of every version of
// every API the cluster serves: every error field carries the code, the version is the
// request's and the response encodes and decodes.
func TestFailEveryVersion(t *testing.T) {
	t.Parallel()
	for key, a := range apis {
		proto := kmsg.RequestForKey(key)
		for v := proto.GetVersion(); v <= proto.MaxVersion(); v++ {
			req := kmsg.RequestForKey(key)
			req.SetVersion(v)
			if p, ok := req.(*kmsg.ProduceRequest); ok {
				p.Acks = -1
			}
			resp := a.fail(req, kerr.PolicyViolation.Code)
			require.NotNil(t, resp, "%s v%d", kmsg.NameForKey(key), v)
			assert.Equal(t, key, resp.Key())
			assert.Equal(t, v, resp.GetVersion(), kmsg.NameForKey(key))

			codes := map[string][]int16{}
			errorCodeFields(reflect.ValueOf(resp), "", codes)
			for field, cs := range codes {
				for _, c := range cs {
					assert.Equal(t, kerr.PolicyViolation.Code, c, "%s v%d %s", kmsg.NameForKey(key), v, field)
				}
			}
			back := req.ResponseKind()
			back.SetVersion(v)
			require.NoError(t, back.ReadFrom(resp.AppendTo(nil)), "%s v%d", kmsg.NameForKey(key), v)
		}
	}
}

func TestFailEchoes(t *testing.T) {
	t.Parallel()
	const code = 6 // NOT_LEADER_OR_FOLLOWER
	name := "orders"
	id := [16]byte{7, 7, 7}
	group := "workers"

	tests := []struct {
		name  string
		req   kmsg.Request
		check func(t *testing.T, resp kmsg.Response)
	}{
		{
			name: "produce by name",
			req: &kmsg.ProduceRequest{Version: 9, Acks: -1, Topics: []kmsg.ProduceRequestTopic{
				{Topic: name, Partitions: []kmsg.ProduceRequestTopicPartition{{Partition: 3}, {Partition: 1}}},
			}},
			check: func(t *testing.T, resp kmsg.Response) {
				r := resp.(*kmsg.ProduceResponse)
				require.Len(t, r.Topics, 1)
				assert.Equal(t, name, r.Topics[0].Topic)
				require.Len(t, r.Topics[0].Partitions, 2)
				p := r.Topics[0].Partitions[0]
				assert.Equal(t, int32(3), p.Partition)
				assert.Equal(t, int16(code), p.ErrorCode)
				assert.Equal(t, int64(-1), p.BaseOffset)
				assert.Equal(t, int64(-1), p.LogStartOffset)
				assert.Equal(t, int32(-1), p.CurrentLeader.LeaderID)
				assert.Equal(t, int32(1), r.Topics[0].Partitions[1].Partition)
			},
		},
		{
			name: "produce v13 by id",
			req: &kmsg.ProduceRequest{Version: 13, Acks: 1, Topics: []kmsg.ProduceRequestTopic{
				{TopicID: id, Partitions: []kmsg.ProduceRequestTopicPartition{{Partition: 0}}},
			}},
			check: func(t *testing.T, resp kmsg.Response) {
				r := resp.(*kmsg.ProduceResponse)
				require.Len(t, r.Topics, 1)
				assert.Equal(t, id, r.Topics[0].TopicID)
			},
		},
		{
			name: "fetch v18 by id",
			req: &kmsg.FetchRequest{Version: 18, SessionID: 42, Topics: []kmsg.FetchRequestTopic{
				{TopicID: id, Partitions: []kmsg.FetchRequestTopicPartition{{Partition: 2}}},
			}},
			check: func(t *testing.T, resp kmsg.Response) {
				r := resp.(*kmsg.FetchResponse)
				assert.Equal(t, int16(code), r.ErrorCode)
				assert.Equal(t, int32(42), r.SessionID)
				require.Len(t, r.Topics, 1)
				assert.Equal(t, id, r.Topics[0].TopicID)
				require.Len(t, r.Topics[0].Partitions, 1)
				p := r.Topics[0].Partitions[0]
				assert.Equal(t, int32(2), p.Partition)
				assert.Equal(t, int64(-1), p.HighWatermark)
				assert.Equal(t, int32(-1), p.PreferredReadReplica)
			},
		},
		{
			name: "metadata by name and id",
			req:  &kmsg.MetadataRequest{Version: 12, Topics: []kmsg.MetadataRequestTopic{{Topic: &name}, {TopicID: id}}},
			check: func(t *testing.T, resp kmsg.Response) {
				r := resp.(*kmsg.MetadataResponse)
				require.Len(t, r.Topics, 2)
				assert.Equal(t, name, *r.Topics[0].Topic)
				assert.Equal(t, "", *r.Topics[1].Topic)
				assert.Equal(t, id, r.Topics[1].TopicID)
				assert.Empty(t, r.Topics[0].Partitions)
			},
		},
		{
			name: "find coordinator v3",
			req:  &kmsg.FindCoordinatorRequest{Version: 3, CoordinatorKey: group},
			check: func(t *testing.T, resp kmsg.Response) {
				r := resp.(*kmsg.FindCoordinatorResponse)
				assert.Equal(t, int16(code), r.ErrorCode)
				assert.Equal(t, int32(-1), r.NodeID)
				assert.Equal(t, int32(-1), r.Port)
			},
		},
		{
			name: "find coordinator v6 batched keys",
			req:  &kmsg.FindCoordinatorRequest{Version: 6, CoordinatorKeys: []string{group, "other"}},
			check: func(t *testing.T, resp kmsg.Response) {
				r := resp.(*kmsg.FindCoordinatorResponse)
				require.Len(t, r.Coordinators, 2)
				assert.Equal(t, group, r.Coordinators[0].Key)
				assert.Equal(t, "other", r.Coordinators[1].Key)
				assert.Equal(t, int32(-1), r.Coordinators[1].NodeID)
			},
		},
		{
			name: "delete topics by name (v5)",
			req:  &kmsg.DeleteTopicsRequest{Version: 5, TopicNames: []string{name, "b"}},
			check: func(t *testing.T, resp kmsg.Response) {
				r := resp.(*kmsg.DeleteTopicsResponse)
				require.Len(t, r.Topics, 2)
				assert.Equal(t, name, *r.Topics[0].Topic)
				assert.Equal(t, "b", *r.Topics[1].Topic)
			},
		},
		{
			name: "delete topics by id (v6)",
			req:  &kmsg.DeleteTopicsRequest{Version: 6, Topics: []kmsg.DeleteTopicsRequestTopic{{TopicID: id}}},
			check: func(t *testing.T, resp kmsg.Response) {
				r := resp.(*kmsg.DeleteTopicsResponse)
				require.Len(t, r.Topics, 1)
				assert.Equal(t, id, r.Topics[0].TopicID)
				assert.Nil(t, r.Topics[0].Topic)
			},
		},
		{
			name: "describe configs",
			req: &kmsg.DescribeConfigsRequest{Version: 4, Resources: []kmsg.DescribeConfigsRequestResource{
				{ResourceType: kmsg.ConfigResourceTypeTopic, ResourceName: name}, {ResourceType: kmsg.ConfigResourceTypeBroker, ResourceName: "0"},
			}},
			check: func(t *testing.T, resp kmsg.Response) {
				r := resp.(*kmsg.DescribeConfigsResponse)
				require.Len(t, r.Resources, 2)
				assert.Equal(t, name, r.Resources[0].ResourceName)
				assert.Equal(t, kmsg.ConfigResourceTypeBroker, r.Resources[1].ResourceType)
			},
		},
		{
			name: "init producer id",
			req:  &kmsg.InitProducerIDRequest{Version: 5},
			check: func(t *testing.T, resp kmsg.Response) {
				r := resp.(*kmsg.InitProducerIDResponse)
				assert.Equal(t, int64(-1), r.ProducerID)
				assert.Equal(t, int16(-1), r.ProducerEpoch)
			},
		},
		{
			name: "share fetch",
			req: &kmsg.ShareFetchRequest{Version: 1, GroupID: &group, Topics: []kmsg.ShareFetchRequestTopic{
				{TopicID: id, Partitions: []kmsg.ShareFetchRequestTopicPartition{{Partition: 0}, {Partition: 5}}},
			}},
			check: func(t *testing.T, resp kmsg.Response) {
				r := resp.(*kmsg.ShareFetchResponse)
				assert.Equal(t, int16(code), r.ErrorCode)
				require.Len(t, r.Topics, 1)
				assert.Equal(t, id, r.Topics[0].TopicID)
				require.Len(t, r.Topics[0].Partitions, 2)
				p := r.Topics[0].Partitions[1]
				assert.Equal(t, int32(5), p.Partition)
				assert.Equal(t, int16(code), p.AcknowledgeErrorCode)
				assert.Equal(t, int32(-1), p.CurrentLeader.LeaderID)
				assert.Equal(t, int32(-1), p.CurrentLeader.LeaderEpoch)
			},
		},
		{
			name: "share acknowledge",
			req: &kmsg.ShareAcknowledgeRequest{Version: 2, GroupID: &group, Topics: []kmsg.ShareAcknowledgeRequestTopic{
				{TopicID: id, Partitions: []kmsg.ShareAcknowledgeRequestTopicPartition{{Partition: 4}}},
			}},
			check: func(t *testing.T, resp kmsg.Response) {
				r := resp.(*kmsg.ShareAcknowledgeResponse)
				require.Len(t, r.Topics, 1)
				require.Len(t, r.Topics[0].Partitions, 1)
				assert.Equal(t, int32(4), r.Topics[0].Partitions[0].Partition)
				assert.Equal(t, int32(-1), r.Topics[0].Partitions[0].CurrentLeader.LeaderID)
			},
		},
		{
			name: "describe share group offsets",
			req: &kmsg.DescribeShareGroupOffsetsRequest{Version: 1, Groups: []kmsg.DescribeShareGroupOffsetsRequestGroup{
				{GroupID: group, Topics: []kmsg.DescribeShareGroupOffsetsRequestGroupTopic{{Topic: name, Partitions: []int32{0, 1}}}},
			}},
			check: func(t *testing.T, resp kmsg.Response) {
				r := resp.(*kmsg.DescribeShareGroupOffsetsResponse)
				require.Len(t, r.Groups, 1)
				assert.Equal(t, group, r.Groups[0].GroupID)
				require.Len(t, r.Groups[0].Topics, 1)
				assert.Equal(t, name, r.Groups[0].Topics[0].Topic)
				require.Len(t, r.Groups[0].Topics[0].Partitions, 2)
				assert.Equal(t, int64(-1), r.Groups[0].Topics[0].Partitions[1].StartOffset)
			},
		},
		{
			name: "share group describe",
			req:  &kmsg.ShareGroupDescribeRequest{Version: 1, GroupIDs: []string{group, "b"}},
			check: func(t *testing.T, resp kmsg.Response) {
				r := resp.(*kmsg.ShareGroupDescribeResponse)
				require.Len(t, r.Groups, 2)
				assert.Equal(t, "b", r.Groups[1].GroupID)
			},
		},
		{
			name: "share group heartbeat",
			req:  &kmsg.ShareGroupHeartbeatRequest{Version: 1, GroupID: group},
			check: func(t *testing.T, resp kmsg.Response) {
				assert.Equal(t, int16(code), resp.(*kmsg.ShareGroupHeartbeatResponse).ErrorCode)
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp := apis[tt.req.Key()].fail(tt.req, code)
			require.NotNil(t, resp)
			assert.Equal(t, tt.req.GetVersion(), resp.GetVersion())
			tt.check(t, resp)
		})
	}
}

func TestFailAcksZeroProduce(t *testing.T) {
	t.Parallel()
	assert.Nil(t, apis[0].fail(&kmsg.ProduceRequest{Version: 9, Acks: 0}, kerr.NotLeaderForPartition.Code))
}

func TestScope(t *testing.T) {
	t.Parallel()
	c, err := Start(Config{Brokers: 1, ListenAddrs: []string{"127.0.0.1:0"}, Topics: []metadata.TopicSpec{{Name: "orders", Partitions: 1}, {Name: "payments", Partitions: 1}}})
	require.NoError(t, err)
	t.Cleanup(c.Close)
	orders := c.meta.Topic("orders").ID
	payments := c.meta.Topic("payments").ID
	unknown := [16]byte{1}
	name := "orders"
	group := "workers:eu"
	shareKey := group + ":" + base64.RawURLEncoding.EncodeToString(payments[:]) + ":3"

	tests := []struct {
		name       string
		req        kmsg.Request
		wantTopics []string
		wantGroups []string
	}{
		{name: "produce by name", req: &kmsg.ProduceRequest{Version: 9, Topics: []kmsg.ProduceRequestTopic{{Topic: "orders"}, {Topic: "x"}}}, wantTopics: []string{"orders", "x"}},
		{name: "produce v13 by id", req: &kmsg.ProduceRequest{Version: 13, Topics: []kmsg.ProduceRequestTopic{{TopicID: orders}, {TopicID: unknown}}}, wantTopics: []string{"orders"}},
		{name: "fetch by id with forgotten topics", req: &kmsg.FetchRequest{Version: 13, Topics: []kmsg.FetchRequestTopic{{TopicID: orders}}, ForgottenTopics: []kmsg.FetchRequestForgottenTopic{{TopicID: payments}}}, wantTopics: []string{"orders", "payments"}},
		{name: "fetch by name", req: &kmsg.FetchRequest{Version: 12, Topics: []kmsg.FetchRequestTopic{{Topic: "payments"}}}, wantTopics: []string{"payments"}},
		{name: "list offsets", req: &kmsg.ListOffsetsRequest{Version: 7, Topics: []kmsg.ListOffsetsRequestTopic{{Topic: "orders"}}}, wantTopics: []string{"orders"}},
		{name: "metadata by name and id", req: &kmsg.MetadataRequest{Version: 12, Topics: []kmsg.MetadataRequestTopic{{Topic: &name}, {TopicID: payments}}}, wantTopics: []string{"orders", "payments"}},
		{name: "metadata for all topics names none", req: &kmsg.MetadataRequest{Version: 12}},
		{name: "find group coordinator v3", req: &kmsg.FindCoordinatorRequest{Version: 3, CoordinatorKey: "g"}, wantGroups: []string{"g"}},
		{name: "find group coordinators v4", req: &kmsg.FindCoordinatorRequest{Version: 4, CoordinatorKeys: []string{"g", "h"}}, wantGroups: []string{"g", "h"}},
		{name: "find transaction coordinator", req: &kmsg.FindCoordinatorRequest{Version: 4, CoordinatorType: 1, CoordinatorKeys: []string{"txn"}}},
		{name: "find share coordinator", req: &kmsg.FindCoordinatorRequest{Version: 6, CoordinatorType: 2, CoordinatorKeys: []string{shareKey}}, wantTopics: []string{"payments"}, wantGroups: []string{group}},
		{name: "create topics", req: &kmsg.CreateTopicsRequest{Version: 7, Topics: []kmsg.CreateTopicsRequestTopic{{Topic: "new"}}}, wantTopics: []string{"new"}},
		{name: "delete topics v5", req: &kmsg.DeleteTopicsRequest{Version: 5, TopicNames: []string{"orders"}}, wantTopics: []string{"orders"}},
		{name: "delete topics v6", req: &kmsg.DeleteTopicsRequest{Version: 6, Topics: []kmsg.DeleteTopicsRequestTopic{{Topic: &name}, {TopicID: payments}}}, wantTopics: []string{"orders", "payments"}},
		{name: "describe configs", req: &kmsg.DescribeConfigsRequest{Resources: []kmsg.DescribeConfigsRequestResource{
			{ResourceType: kmsg.ConfigResourceTypeTopic, ResourceName: "orders"},
			{ResourceType: kmsg.ConfigResourceTypeBroker, ResourceName: "0"},
			{ResourceType: kmsg.ConfigResourceTypeGroupConfig, ResourceName: "g"},
		}}, wantTopics: []string{"orders"}, wantGroups: []string{"g"}},
		{name: "incremental alter configs", req: &kmsg.IncrementalAlterConfigsRequest{Resources: []kmsg.IncrementalAlterConfigsRequestResource{
			{ResourceType: kmsg.ConfigResourceTypeTopic, ResourceName: "payments"},
		}}, wantTopics: []string{"payments"}},
		{name: "create partitions", req: &kmsg.CreatePartitionsRequest{Topics: []kmsg.CreatePartitionsRequestTopic{{Topic: "orders"}}}, wantTopics: []string{"orders"}},
		{name: "init producer id", req: &kmsg.InitProducerIDRequest{}},
		{name: "api versions", req: &kmsg.ApiVersionsRequest{}},
		{name: "share group heartbeat", req: &kmsg.ShareGroupHeartbeatRequest{GroupID: "g", SubscribedTopicNames: []string{"orders"}}, wantTopics: []string{"orders"}, wantGroups: []string{"g"}},
		{name: "share group describe", req: &kmsg.ShareGroupDescribeRequest{GroupIDs: []string{"g", "h"}}, wantGroups: []string{"g", "h"}},
		{name: "share fetch", req: &kmsg.ShareFetchRequest{GroupID: &group, Topics: []kmsg.ShareFetchRequestTopic{{TopicID: orders}}, ForgottenTopicsData: []kmsg.ShareFetchRequestForgottenTopicsData{{TopicID: payments}}}, wantTopics: []string{"orders", "payments"}, wantGroups: []string{group}},
		{name: "share acknowledge", req: &kmsg.ShareAcknowledgeRequest{GroupID: &group, Topics: []kmsg.ShareAcknowledgeRequestTopic{{TopicID: payments}}}, wantTopics: []string{"payments"}, wantGroups: []string{group}},
		{name: "describe share group offsets", req: &kmsg.DescribeShareGroupOffsetsRequest{Groups: []kmsg.DescribeShareGroupOffsetsRequestGroup{{GroupID: "g", Topics: []kmsg.DescribeShareGroupOffsetsRequestGroupTopic{{Topic: "orders"}}}}}, wantTopics: []string{"orders"}, wantGroups: []string{"g"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			topics, groups := apis[tt.req.Key()].scope(c, tt.req)
			assert.Equal(t, tt.wantTopics, topics)
			assert.Equal(t, tt.wantGroups, groups)
		})
	}
}
