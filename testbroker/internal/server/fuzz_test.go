package server

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"io"
	"math"
	"net"
	"os"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kshare/kshare/testbroker/internal/clock"
	"github.com/kshare/kshare/testbroker/internal/metadata"
	"github.com/kshare/kshare/testbroker/internal/wire"
)

// fuzzSeeds are request frames (without their size) of every API the cluster serves.
func fuzzSeeds() [][]byte {
	id := "fuzz"
	topic := "orders"
	metadata := kmsg.NewPtrMetadataRequest()
	metadata.Version = 12
	metadata.Topics = []kmsg.MetadataRequestTopic{{Topic: &topic}}
	produce := kmsg.NewPtrProduceRequest()
	produce.Version = 9
	produce.Acks = -1
	produce.Topics = []kmsg.ProduceRequestTopic{{Topic: topic, Partitions: []kmsg.ProduceRequestTopicPartition{{Partition: 0, Records: []byte("not a batch")}}}}
	produceAcks0 := kmsg.NewPtrProduceRequest()
	produceAcks0.Version = 7
	produceAcks0.Acks = 0
	produceAcks0.Topics = produce.Topics
	fetch := kmsg.NewPtrFetchRequest()
	fetch.Version = 12
	fetch.MaxWaitMillis = 500
	fetch.MinBytes = 1
	fetch.Topics = []kmsg.FetchRequestTopic{{Topic: topic, Partitions: []kmsg.FetchRequestTopicPartition{{Partition: 0, PartitionMaxBytes: 1 << 20}}}}
	listOffsets := kmsg.NewPtrListOffsetsRequest()
	listOffsets.Version = 7
	listOffsets.Topics = []kmsg.ListOffsetsRequestTopic{{Topic: topic, Partitions: []kmsg.ListOffsetsRequestTopicPartition{{Timestamp: -1}}}}
	findCoordinator := kmsg.NewPtrFindCoordinatorRequest()
	findCoordinator.Version = 4
	findCoordinator.CoordinatorKeys = []string{"g"}
	apiVersions := kmsg.NewPtrApiVersionsRequest()
	apiVersions.Version = 4
	apiVersions.ClientSoftwareName = "fuzz"
	apiVersions.ClientSoftwareVersion = "1"
	createTopics := kmsg.NewPtrCreateTopicsRequest()
	createTopics.Version = 7
	createTopics.Topics = []kmsg.CreateTopicsRequestTopic{{Topic: "new", NumPartitions: 2, ReplicationFactor: -1}}
	deleteTopics := kmsg.NewPtrDeleteTopicsRequest()
	deleteTopics.Version = 6
	deleteTopics.Topics = []kmsg.DeleteTopicsRequestTopic{{Topic: &topic}}
	initProducerID := kmsg.NewPtrInitProducerIDRequest()
	initProducerID.Version = 4
	describeConfigs := kmsg.NewPtrDescribeConfigsRequest()
	describeConfigs.Version = 4
	describeConfigs.Resources = []kmsg.DescribeConfigsRequestResource{{ResourceType: kmsg.ConfigResourceTypeTopic, ResourceName: topic}}
	createPartitions := kmsg.NewPtrCreatePartitionsRequest()
	createPartitions.Version = 3
	createPartitions.Topics = []kmsg.CreatePartitionsRequestTopic{{Topic: topic, Count: 3}}
	alterConfigs := kmsg.NewPtrIncrementalAlterConfigsRequest()
	alterConfigs.Version = 1
	alterConfigs.Resources = []kmsg.IncrementalAlterConfigsRequestResource{{ResourceType: kmsg.ConfigResourceTypeTopic, ResourceName: topic,
		Configs: []kmsg.IncrementalAlterConfigsRequestResourceConfig{{Name: "retention.ms", Value: &id}}}}
	describeCluster := kmsg.NewPtrDescribeClusterRequest()
	describeCluster.Version = 1
	deleteRecords := kmsg.NewPtrDeleteRecordsRequest()
	deleteRecords.Version = 2
	deleteRecords.Topics = []kmsg.DeleteRecordsRequestTopic{{Topic: topic, Partitions: []kmsg.DeleteRecordsRequestTopicPartition{{Offset: -1}}}}

	var seeds [][]byte
	for i, req := range []kmsg.Request{metadata, produce, produceAcks0, fetch, listOffsets, findCoordinator, apiVersions,
		createTopics, deleteTopics, initProducerID, describeConfigs, createPartitions, alterConfigs, describeCluster, deleteRecords} {
		seeds = append(seeds, wire.AppendRequest(nil, int32(i), &id, req)[4:])
	}
	return seeds
}

// FuzzServeFrame sends one arbitrary frame to a running cluster and reads until the cluster
// answers or closes the connection. Whatever the frame, the cluster must not crash, must not
// answer with another correlation id, and must go on answering ApiVersions on a new connection.
func FuzzServeFrame(f *testing.F) {
	for _, s := range fuzzSeeds() {
		f.Add(s)
		f.Add(s[:len(s)-len(s)/3])
	}
	f.Add([]byte{})
	f.Add([]byte{0x27, 0x0f, 0, 0, 0, 0, 0, 1, 0xff, 0xff})
	f.Add([]byte{0, 18, 0, 127, 0, 0, 0, 1, 0xff, 0xff})
	f.Add([]byte{0, 0, 0, 9, 0, 0, 0, 1, 0xff, 0xff, 0xde, 0xad, 0xbe, 0xef})
	// CreatePartitions asking for 0x30000003 partitions: refused, not built.
	huge, _ := hex.DecodeString("002500030000000b000466007a7a0002076f726465727330000003000000753a980000")
	f.Add(huge)

	manual := clock.NewManual(time.Unix(1700000000, 0))
	c, err := Start(Config{
		Brokers:     1,
		ListenAddrs: []string{"127.0.0.1:0"},
		Clock:       manual,
		Topics:      []metadata.TopicSpec{{Name: "orders", Partitions: 2}},
	})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(c.Close)
	addr := c.Addrs()[0]

	f.Fuzz(func(t *testing.T, payload []byte) {
		nc, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer nc.Close()
		msg := binary.BigEndian.AppendUint32(nil, uint32(len(payload)))
		if _, err := nc.Write(append(msg, payload...)); err != nil {
			t.Fatal(err)
		}
		// Half-close: once the cluster is done with the frame it reads EOF and closes, so the
		// read below ends even for requests that take no response.
		if err := nc.(*net.TCPConn).CloseWrite(); err != nil {
			t.Fatal(err)
		}
		resp := fuzzReadAll(t, nc, manual)
		if len(resp) > 0 && len(payload) >= 8 {
			fr, err := wire.ReadFrame(bytes.NewReader(resp), 1<<30)
			if err != nil {
				t.Fatalf("unreadable response frame %x: %v", resp, err)
			}
			if !bytes.Equal(fr[:4], payload[4:8]) {
				t.Fatalf("response correlation id %x, request's %x", fr[:4], payload[4:8])
			}
		}
		if err := fuzzApiVersionsOK(addr); err != nil {
			t.Fatalf("cluster no longer answers ApiVersions: %v", err)
		}
	})
}

// fuzzReadAll reads until the cluster closes the connection. Whenever nothing arrives for a
// moment the manual clock jumps by the longest wait a request can ask for (2^31-1 ms), so a
// request parked on the clock (a long-polling fetch) is released at once.
func fuzzReadAll(t *testing.T, nc net.Conn, manual *clock.Manual) []byte {
	var out []byte
	buf := make([]byte, 64<<10)
	for range 500 {
		if err := nc.SetReadDeadline(time.Now().Add(20 * time.Millisecond)); err != nil {
			t.Fatal(err)
		}
		for {
			n, err := nc.Read(buf)
			out = append(out, buf[:n]...)
			if err == nil {
				continue
			}
			if errors.Is(err, os.ErrDeadlineExceeded) {
				break
			}
			if errors.Is(err, io.EOF) || fuzzConnClosed(err) {
				return out
			}
			t.Fatal(err)
		}
		manual.Advance(math.MaxInt32 * time.Millisecond)
	}
	t.Fatal("the cluster neither answered nor closed the connection")
	return nil
}

// fuzzConnClosed reports a read error that means the connection is gone (reset by the cluster).
func fuzzConnClosed(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && !op.Timeout()
}

// fuzzApiVersionsOK sends ApiVersions v3 on a new connection and checks for an answer without error.
func fuzzApiVersionsOK(addr string) error {
	nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return err
	}
	defer nc.Close()
	if err := nc.SetDeadline(time.Now().Add(5 * time.Second)); err != nil {
		return err
	}
	req := kmsg.NewPtrApiVersionsRequest()
	req.Version = 3
	if _, err := nc.Write(wire.AppendRequest(nil, 1, nil, req)); err != nil {
		return err
	}
	f, err := wire.ReadFrame(nc, 1<<20)
	if err != nil {
		return err
	}
	resp := kmsg.NewPtrApiVersionsResponse()
	resp.Version = 3
	if err := resp.ReadFrom(f[4:]); err != nil {
		return err
	}
	if resp.ErrorCode != 0 || len(resp.ApiKeys) == 0 {
		return errors.New("ApiVersions answered with an error or no keys")
	}
	return nil
}
