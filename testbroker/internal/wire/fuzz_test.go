package wire_test

import (
	"errors"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kshare/kshare/testbroker/internal/wire"
)

// seedRequests are valid requests of the APIs the cluster serves, flexible and not.
func seedRequests() []kmsg.Request {
	fetch := kmsg.NewPtrFetchRequest()
	fetch.Version = 16
	fetch.Topics = []kmsg.FetchRequestTopic{{TopicID: [16]byte{1}, Partitions: []kmsg.FetchRequestTopicPartition{{Partition: 0, FetchOffset: 5, PartitionMaxBytes: 1 << 20}}}}
	fetchOld := kmsg.NewPtrFetchRequest()
	fetchOld.Version = 4
	fetchOld.Topics = []kmsg.FetchRequestTopic{{Topic: "t", Partitions: []kmsg.FetchRequestTopicPartition{{Partition: 1}}}}
	apiVersions := kmsg.NewPtrApiVersionsRequest()
	apiVersions.Version = 4
	apiVersions.ClientSoftwareName = "fuzz"
	apiVersions.ClientSoftwareVersion = "0"
	findCoordinator := kmsg.NewPtrFindCoordinatorRequest()
	findCoordinator.Version = 6
	findCoordinator.CoordinatorType = 2
	findCoordinator.CoordinatorKeys = []string{"g:AAAAAAAAAAAAAAAAAAAAAA:0"}
	createTopics := kmsg.NewPtrCreateTopicsRequest()
	createTopics.Version = 7
	createTopics.Topics = []kmsg.CreateTopicsRequestTopic{{Topic: "t", NumPartitions: 3, ReplicationFactor: 1,
		Configs: []kmsg.CreateTopicsRequestTopicConfig{{Name: "cleanup.policy", Value: ptr("delete")}}}}
	listOffsets := kmsg.NewPtrListOffsetsRequest()
	listOffsets.Version = 9
	listOffsets.Topics = []kmsg.ListOffsetsRequestTopic{{Topic: "t", Partitions: []kmsg.ListOffsetsRequestTopicPartition{{Partition: 0, Timestamp: -1}}}}
	shareAck := kmsg.NewPtrShareAcknowledgeRequest()
	shareAck.Version = 2
	shareAck.GroupID = ptr("g")
	shareAck.Topics = []kmsg.ShareAcknowledgeRequestTopic{{TopicID: [16]byte{2}, Partitions: []kmsg.ShareAcknowledgeRequestTopicPartition{{
		Partition: 0, AcknowledgementBatches: []kmsg.ShareAcknowledgeRequestTopicPartitionAcknowledgementBatch{{FirstOffset: 0, LastOffset: 3, AcknowledgeTypes: []int8{1}}},
	}}}}
	return []kmsg.Request{
		metadataV12("a", "b"), produceV7(), fetch, fetchOld, apiVersions, kmsg.NewPtrApiVersionsRequest(),
		findCoordinator, createTopics, listOffsets, shareAck,
	}
}

// FuzzParseRequest feeds arbitrary frames to ParseRequest: it must never panic, a nil error
// must come with a body of the header's key and version, and a decoded body must encode again.
func FuzzParseRequest(f *testing.F) {
	for i, req := range seedRequests() {
		fr := frame(int32(i), ptr("fuzz"), req)
		f.Add(fr)
		f.Add(fr[:len(fr)/2])
		f.Add(fr[:11])
	}
	f.Add([]byte{})
	f.Add([]byte{0x27, 0x0f, 0, 0, 0, 0, 0, 1, 0xff, 0xff})              // unknown key 9999
	f.Add([]byte{0, 18, 0, 127, 0, 0, 0, 1, 0xff, 0xff, 0, 0, 0})        // ApiVersions v127
	f.Add([]byte{0, 3, 0, 12, 0, 0, 0, 1, 0xff, 0xff, 0x80, 0x80, 0x80}) // endless tag varint
	f.Add([]byte("\x00\x00\x00\x07\x00\x00\x00\x01\x7f\xffgarbage"))     // client id past the end

	f.Fuzz(func(t *testing.T, data []byte) {
		req, err := wire.ParseRequest(data)
		switch {
		case err == nil:
			if req == nil || req.Body == nil {
				t.Fatalf("nil error with request %+v", req)
			}
			if req.Body.Key() != req.Key || req.Body.GetVersion() != req.Version {
				t.Fatalf("body is %s v%d, header says key %d v%d", kmsg.NameForKey(req.Body.Key()), req.Body.GetVersion(), req.Key, req.Version)
			}
			_ = req.Body.AppendTo(nil)
		case errors.Is(err, wire.ErrUnsupportedVersion):
			if req == nil || req.Body != nil {
				t.Fatalf("unsupported version must return the header alone, got %+v", req)
			}
		case req != nil:
			t.Fatalf("error %v came with a request", err)
		}
	})
}
