package testbroker_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kshare/kshare/testbroker"
)

// TestBrokerConfigValidation: Start refuses an unknown broker config, a value that does not
// parse or fails Kafka's validator, and group bounds that do not hold together, each with an
// error that names the config.
func TestBrokerConfigValidation(t *testing.T) {
	t.Parallel()
	cases := []struct {
		key, value string
		err        string
	}{
		{"no.such.config", "1", `server: unknown broker config "no.such.config"`},
		{"num.partitions", "many", "server: broker config: Invalid value many for configuration num.partitions: Not a number of type INT"},
		{"num.partitions", "0", "server: broker config: Invalid value 0 for configuration num.partitions: Value must be at least 1"},
		{"auto.create.topics.enable", "yes", "server: broker config: Invalid value yes for configuration auto.create.topics.enable: Expected value to be either true or false"},
		{"log.message.timestamp.type", "Now", "server: broker config: Invalid value Now for configuration log.message.timestamp.type: String must be one of: CreateTime, LogAppendTime"},
		{"group.share.delivery.count.limit", "11", "server: broker config: Invalid value 11 for configuration group.share.delivery.count.limit: Value must be no more than 10"},
		{"group.share.record.lock.duration.ms", "10000",
			"server: broker config: group.share.record.lock.duration.ms must be greater than or equal to group.share.min.record.lock.duration.ms"},
	}
	for _, tc := range cases {
		t.Run(tc.key+"="+tc.value, func(t *testing.T) {
			c, err := testbroker.Start(testbroker.BrokerConfig(tc.key, tc.value))
			if c != nil {
				c.Close()
			}
			require.EqualError(t, err, tc.err)
		})
	}
}

// TestBrokerConfigDefaults: num.partitions and auto.create.topics.enable change what Metadata
// auto-creation does.
func TestBrokerConfigDefaults(t *testing.T) {
	t.Parallel()
	c := testbroker.StartT(t, testbroker.BrokerConfig("num.partitions", "4"))
	ctx, cl, _ := adminClients(t, c)
	req := kmsg.NewPtrMetadataRequest()
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr("auto")
	req.Topics, req.AllowAutoTopicCreation = append(req.Topics, rt), true
	resp, err := req.RequestWith(ctx, cl)
	require.NoError(t, err)
	require.Zero(t, resp.Topics[0].ErrorCode)
	assert.Len(t, resp.Topics[0].Partitions, 4)

	off := testbroker.StartT(t, testbroker.BrokerConfig("auto.create.topics.enable", "false"))
	ctx, cl, _ = adminClients(t, off)
	resp, err = req.RequestWith(ctx, cl)
	require.NoError(t, err)
	assert.Equal(t, kerr.UnknownTopicOrPartition.Code, resp.Topics[0].ErrorCode)
}

// configsOf turns a kadm resource's configs into a map by name.
func configsOf(t *testing.T, rcs kadm.ResourceConfigs, err error) map[string]kadm.Config {
	t.Helper()
	require.NoError(t, err)
	require.Len(t, rcs, 1)
	require.NoError(t, rcs[0].Err)
	out := make(map[string]kadm.Config)
	for _, c := range rcs[0].Configs {
		out[c.Key] = c
	}
	return out
}

func value(c kadm.Config) string {
	if c.Value == nil {
		return "<null>"
	}
	return *c.Value
}

// TestDescribeTopicConfigs: a topic's configs show the topic's own values as
// DYNAMIC_TOPIC_CONFIG, a broker value set at start as STATIC_BROKER_CONFIG, and Kafka's
// defaults (derived from the broker synonym's unit, as retention.ms from log.retention.hours)
// as DEFAULT_CONFIG.
func TestDescribeTopicConfigs(t *testing.T) {
	t.Parallel()
	c := testbroker.StartT(t,
		testbroker.BrokerConfig("log.message.timestamp.type", "LogAppendTime"),
		testbroker.BrokerConfig("log.retention.hours", "2"),
		testbroker.TopicWithConfigs("described", 1, map[string]string{"cleanup.policy": "compact, delete", "max.message.bytes": "2048"}))
	ctx, _, adm := adminClients(t, c)
	rcs, err := adm.DescribeTopicConfigs(ctx, "described")
	cfgs := configsOf(t, rcs, err)

	cases := []struct {
		name   string
		value  string
		source kmsg.ConfigSource
	}{
		{"cleanup.policy", "compact,delete", kmsg.ConfigSourceDynamicTopicConfig},
		{"max.message.bytes", "2048", kmsg.ConfigSourceDynamicTopicConfig},
		{"message.timestamp.type", "LogAppendTime", kmsg.ConfigSourceStaticBrokerConfig},
		{"retention.ms", "7200000", kmsg.ConfigSourceDefaultConfig},
		{"segment.bytes", "1073741824", kmsg.ConfigSourceDefaultConfig},
		{"min.insync.replicas", "1", kmsg.ConfigSourceDefaultConfig},
		{"remote.storage.enable", "false", kmsg.ConfigSourceDefaultConfig},
	}
	for _, tc := range cases {
		require.Contains(t, cfgs, tc.name)
		assert.Equal(t, tc.value, value(cfgs[tc.name]), tc.name)
		assert.Equal(t, tc.source, cfgs[tc.name].Source, tc.name)
	}
	syn := cfgs["message.timestamp.type"].Synonyms
	require.Len(t, syn, 2)
	assert.Equal(t, kadm.ConfigSynonym{Key: "log.message.timestamp.type", Value: kmsg.StringPtr("LogAppendTime"), Source: kmsg.ConfigSourceStaticBrokerConfig}, syn[0])
	assert.Equal(t, kmsg.ConfigSourceDefaultConfig, syn[1].Source)

	rcs, err = adm.DescribeTopicConfigs(ctx, "missing")
	require.NoError(t, err)
	assert.ErrorIs(t, rcs[0].Err, kerr.UnknownTopicOrPartition)
}

// describeConfigs sends a raw DescribeConfigs v4 and returns its resources.
func describeConfigs(t *testing.T, ctx context.Context, cl *kgo.Client, typ kmsg.ConfigResourceType, name string, keys ...string) kmsg.DescribeConfigsResponseResource {
	t.Helper()
	req := kmsg.NewPtrDescribeConfigsRequest()
	req.Version, req.IncludeSynonyms = 4, true
	r := kmsg.NewDescribeConfigsRequestResource()
	r.ResourceType, r.ResourceName, r.ConfigNames = typ, name, keys
	req.Resources = append(req.Resources, r)
	resp, err := req.RequestWith(ctx, cl)
	require.NoError(t, err)
	require.Len(t, resp.Resources, 1)
	return resp.Resources[0]
}

// TestDescribeBrokerConfigs lists a broker's configs with Kafka's read-only flags and types,
// through kadm and raw DescribeConfigs, and refuses another broker's id.
func TestDescribeBrokerConfigs(t *testing.T) {
	t.Parallel()
	c := testbroker.StartT(t, testbroker.NumBrokers(2), testbroker.BrokerConfig("num.partitions", "6"))
	ctx, cl, adm := adminClients(t, c)

	rcs, err := adm.DescribeBrokerConfigs(ctx, 1)
	cfgs := configsOf(t, rcs, err)
	assert.Equal(t, "6", value(cfgs["num.partitions"]))
	assert.Equal(t, kmsg.ConfigSourceStaticBrokerConfig, cfgs["num.partitions"].Source)
	assert.Equal(t, "30000", value(cfgs["group.share.record.lock.duration.ms"]))
	assert.Equal(t, kmsg.ConfigSourceDefaultConfig, cfgs["group.share.record.lock.duration.ms"].Source)
	assert.Equal(t, "<null>", value(cfgs["log.retention.ms"]))

	res := describeConfigs(t, ctx, cl, kmsg.ConfigResourceTypeBroker, "0", "num.partitions", "message.max.bytes", "log.cleanup.policy")
	require.Zero(t, res.ErrorCode)
	byName := make(map[string]kmsg.DescribeConfigsResponseResourceConfig)
	for _, e := range res.Configs {
		byName[e.Name] = e
	}
	require.Len(t, byName, 3)
	assert.True(t, byName["num.partitions"].ReadOnly)
	assert.Equal(t, kmsg.ConfigTypeInt, byName["num.partitions"].ConfigType)
	assert.False(t, byName["message.max.bytes"].ReadOnly)
	assert.Equal(t, "1048588", *byName["message.max.bytes"].Value)
	assert.Equal(t, kmsg.ConfigTypeList, byName["log.cleanup.policy"].ConfigType)

	// kgo routes a broker resource to that broker; sent elsewhere, Kafka refuses it.
	req := kmsg.NewPtrDescribeConfigsRequest()
	req.Version = 4
	r := kmsg.NewDescribeConfigsRequestResource()
	r.ResourceType, r.ResourceName = kmsg.ConfigResourceTypeBroker, "1"
	req.Resources = append(req.Resources, r)
	resp := roundTrip[*kmsg.DescribeConfigsResponse](t, c.Addrs()[0], req)
	assert.Equal(t, kerr.InvalidRequest.Code, resp.Resources[0].ErrorCode)
	assert.Equal(t, "Unexpected broker id, expected 0 or empty string, but received 1", *resp.Resources[0].ErrorMessage)
}

// TestAlterTopicConfigs sets, appends to, subtracts from and deletes topic configs through kadm
// and checks the refusals Kafka's controller gives.
func TestAlterTopicConfigs(t *testing.T) {
	t.Parallel()
	c := testbroker.StartT(t, testbroker.Topic("altered", 1))
	ctx, _, adm := adminClients(t, c)
	alter := func(configs ...kadm.AlterConfig) kadm.AlterConfigsResponse {
		t.Helper()
		resps, err := adm.AlterTopicConfigs(ctx, configs, "altered")
		require.NoError(t, err)
		require.Len(t, resps, 1)
		return resps[0]
	}

	require.NoError(t, alter(
		kadm.AlterConfig{Op: kadm.SetConfig, Name: "retention.ms", Value: kmsg.StringPtr("60000")},
		kadm.AlterConfig{Op: kadm.AppendConfig, Name: "cleanup.policy", Value: kmsg.StringPtr("compact")},
	).Err)
	info, _ := c.Topic("altered")
	assert.Equal(t, map[string]string{"retention.ms": "60000", "cleanup.policy": "delete,compact"}, info.Configs)
	rcs, err := adm.DescribeTopicConfigs(ctx, "altered")
	cfgs := configsOf(t, rcs, err)
	assert.Equal(t, "60000", value(cfgs["retention.ms"]))
	assert.Equal(t, kmsg.ConfigSourceDynamicTopicConfig, cfgs["retention.ms"].Source)

	require.NoError(t, alter(
		kadm.AlterConfig{Op: kadm.DeleteConfig, Name: "retention.ms"},
		kadm.AlterConfig{Op: kadm.SubtractConfig, Name: "cleanup.policy", Value: kmsg.StringPtr("delete")},
	).Err)
	info, _ = c.Topic("altered")
	assert.Equal(t, map[string]string{"cleanup.policy": "compact"}, info.Configs)

	resps, err := adm.ValidateAlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "retention.ms", Value: kmsg.StringPtr("1")}}, "altered")
	require.NoError(t, err)
	require.NoError(t, resps[0].Err)
	info, _ = c.Topic("altered")
	assert.NotContains(t, info.Configs, "retention.ms", "validate-only changes nothing")

	cases := []struct {
		name   string
		config kadm.AlterConfig
		err    *kerr.Error
		msg    string
	}{
		{"unknown", kadm.AlterConfig{Op: kadm.SetConfig, Name: "retention.days", Value: kmsg.StringPtr("1")},
			kerr.InvalidConfig, "Unknown topic config name: retention.days"},
		{"not a number", kadm.AlterConfig{Op: kadm.SetConfig, Name: "segment.bytes", Value: kmsg.StringPtr("big")},
			kerr.InvalidConfig, "Invalid value big for configuration segment.bytes: Not a number of type INT"},
		{"too small", kadm.AlterConfig{Op: kadm.SetConfig, Name: "segment.bytes", Value: kmsg.StringPtr("1024")},
			kerr.InvalidConfig, "Invalid value 1024 for configuration segment.bytes: Value must be at least 1048576"},
		{"append to a scalar", kadm.AlterConfig{Op: kadm.AppendConfig, Name: "retention.ms", Value: kmsg.StringPtr("1")},
			kerr.InvalidConfig, "Can't APPEND to key retention.ms because its type is not LIST."},
		{"bad list entry", kadm.AlterConfig{Op: kadm.AppendConfig, Name: "cleanup.policy", Value: kmsg.StringPtr("shred")},
			kerr.InvalidConfig, "Invalid value shred for configuration cleanup.policy: String must be one of: compact, delete"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := alter(tc.config)
			assert.ErrorIs(t, got.Err, tc.err)
			assert.Equal(t, tc.msg, got.ErrMessage)
		})
	}

	resps, err = adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "retention.ms", Value: kmsg.StringPtr("1")}}, "missing")
	require.NoError(t, err)
	assert.ErrorIs(t, resps[0].Err, kerr.UnknownTopicOrPartition)
	assert.Equal(t, "The topic 'missing' does not exist.", resps[0].ErrMessage)
}

// TestAlterBrokerConfigs changes dynamic broker configs for every broker and for one, and
// refuses configs Kafka reads only at start.
func TestAlterBrokerConfigs(t *testing.T) {
	t.Parallel()
	c := testbroker.StartT(t, testbroker.NumBrokers(2))
	ctx, cl, adm := adminClients(t, c)

	resps, err := adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "log.message.timestamp.type", Value: kmsg.StringPtr("LogAppendTime")}})
	require.NoError(t, err)
	require.NoError(t, resps[0].Err)
	resps, err = adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "message.max.bytes", Value: kmsg.StringPtr("4096")}}, 1)
	require.NoError(t, err)
	require.NoError(t, resps[0].Err)

	rcs, err := adm.DescribeBrokerConfigs(ctx, 1)
	cfgs := configsOf(t, rcs, err)
	assert.Equal(t, "LogAppendTime", value(cfgs["log.message.timestamp.type"]))
	assert.Equal(t, kmsg.ConfigSourceDynamicDefaultBrokerConfig, cfgs["log.message.timestamp.type"].Source)
	assert.Equal(t, "4096", value(cfgs["message.max.bytes"]))
	assert.Equal(t, kmsg.ConfigSourceDynamicBrokerConfig, cfgs["message.max.bytes"].Source)
	rcs, err = adm.DescribeBrokerConfigs(ctx, 0)
	cfgs = configsOf(t, rcs, err)
	assert.Equal(t, "1048588", value(cfgs["message.max.bytes"]), "broker 0 keeps its value")
	rcs, err = adm.DescribeBrokerConfigs(ctx)
	cfgs = configsOf(t, rcs, err)
	assert.Equal(t, []string{"log.message.timestamp.type"}, keys(cfgs), "the cluster-wide resource lists dynamic configs only")

	// A new topic takes the new cluster-wide default.
	created, err := adm.CreateTopic(ctx, 1, 1, nil, "after")
	require.NoError(t, err)
	require.NoError(t, created.Err)
	assert.Equal(t, "LogAppendTime", *created.Configs["message.timestamp.type"].Value)
	assert.Equal(t, kmsg.ConfigSourceDynamicDefaultBrokerConfig, created.Configs["message.timestamp.type"].Source)

	resps, err = adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "num.partitions", Value: kmsg.StringPtr("3")}})
	require.NoError(t, err)
	assert.ErrorIs(t, resps[0].Err, kerr.InvalidRequest)
	assert.Equal(t, "Cannot update these configs dynamically: Set(num.partitions)", resps[0].ErrMessage)

	resps, err = adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{{Op: kadm.AppendConfig, Name: "message.max.bytes", Value: kmsg.StringPtr("1")}}, 0)
	require.NoError(t, err)
	assert.ErrorIs(t, resps[0].Err, kerr.InvalidConfig)
	assert.Equal(t, "Config value append is not allowed for config key: message.max.bytes", resps[0].ErrMessage)

	// A broker resource sent to another broker is refused, as Kafka refuses it.
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	r := kmsg.NewIncrementalAlterConfigsRequestResource()
	r.ResourceType, r.ResourceName = kmsg.ConfigResourceTypeBroker, "1"
	r.Configs = []kmsg.IncrementalAlterConfigsRequestResourceConfig{{Name: "message.max.bytes", Value: kmsg.StringPtr("1")}}
	req.Resources = append(req.Resources, r)
	resp, err := req.RequestWith(ctx, cl.Broker(0))
	require.NoError(t, err)
	assert.Equal(t, kerr.InvalidRequest.Code, resp.Resources[0].ErrorCode)
	assert.Equal(t, "Unexpected broker id, expected 0, but received 1", *resp.Resources[0].ErrorMessage)
}

func keys(m map[string]kadm.Config) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// alterGroupConfigs sets group configs with a raw IncrementalAlterConfigs (kadm has no group
// resource helper) and returns the resource's result.
func alterGroupConfigs(t *testing.T, ctx context.Context, cl *kgo.Client, group string, validateOnly bool, ops ...kmsg.IncrementalAlterConfigsRequestResourceConfig) kmsg.IncrementalAlterConfigsResponseResource {
	t.Helper()
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	req.ValidateOnly = validateOnly
	r := kmsg.NewIncrementalAlterConfigsRequestResource()
	r.ResourceType, r.ResourceName, r.Configs = kmsg.ConfigResourceTypeGroupConfig, group, ops
	req.Resources = append(req.Resources, r)
	resp, err := req.RequestWith(ctx, cl)
	require.NoError(t, err)
	require.Len(t, resp.Resources, 1)
	return resp.Resources[0]
}

func setOp(name, v string) kmsg.IncrementalAlterConfigsRequestResourceConfig {
	return kmsg.IncrementalAlterConfigsRequestResourceConfig{Name: name, Op: kmsg.IncrementalAlterConfigOpSet, Value: kmsg.StringPtr(v)}
}

// TestGroupConfigs sets group configs for a group that does not exist yet, describes them with
// their sources, and checks Kafka's validation against the broker's bounds.
func TestGroupConfigs(t *testing.T) {
	t.Parallel()
	c := testbroker.StartT(t, testbroker.BrokerConfig("group.share.max.record.lock.duration.ms", "120000"))
	ctx, cl, _ := adminClients(t, c)

	res := alterGroupConfigs(t, ctx, cl, "shares", false,
		setOp("share.record.lock.duration.ms", "90000"),
		setOp("share.auto.offset.reset", "by_duration:P1DT2H"),
		setOp("share.renew.acknowledge.enable", "FALSE"))
	require.Zero(t, res.ErrorCode, res.ErrorMessage)

	described := describeConfigs(t, ctx, cl, kmsg.ConfigResourceTypeGroupConfig, "shares")
	require.Zero(t, described.ErrorCode)
	byName := make(map[string]kmsg.DescribeConfigsResponseResourceConfig)
	for _, e := range described.Configs {
		byName[e.Name] = e
	}
	for _, tc := range []struct {
		name, value string
		source      kmsg.ConfigSource
	}{
		{"share.record.lock.duration.ms", "90000", kmsg.ConfigSourceGroupConfig},
		{"share.auto.offset.reset", "by_duration:P1DT2H", kmsg.ConfigSourceGroupConfig},
		{"share.renew.acknowledge.enable", "false", kmsg.ConfigSourceGroupConfig},
		{"share.delivery.count.limit", "5", kmsg.ConfigSourceDefaultConfig},
		{"share.partition.max.record.locks", "2000", kmsg.ConfigSourceDefaultConfig},
		{"share.session.timeout.ms", "45000", kmsg.ConfigSourceDefaultConfig},
		{"share.heartbeat.interval.ms", "5000", kmsg.ConfigSourceDefaultConfig},
		{"share.isolation.level", "read_uncommitted", kmsg.ConfigSourceDefaultConfig},
		{"consumer.session.timeout.ms", "45000", kmsg.ConfigSourceDefaultConfig},
	} {
		require.Contains(t, byName, tc.name)
		assert.Equal(t, tc.value, *byName[tc.name].Value, tc.name)
		assert.Equal(t, tc.source, byName[tc.name].Source, tc.name)
		assert.False(t, byName[tc.name].ReadOnly, tc.name)
	}

	// Validate-only and DELETE.
	res = alterGroupConfigs(t, ctx, cl, "shares", true, setOp("share.delivery.count.limit", "3"))
	require.Zero(t, res.ErrorCode)
	res = alterGroupConfigs(t, ctx, cl, "shares", false, kmsg.IncrementalAlterConfigsRequestResourceConfig{
		Name: "share.record.lock.duration.ms", Op: kmsg.IncrementalAlterConfigOpDelete,
	})
	require.Zero(t, res.ErrorCode)
	described = describeConfigs(t, ctx, cl, kmsg.ConfigResourceTypeGroupConfig, "shares", "share.record.lock.duration.ms", "share.delivery.count.limit")
	require.Len(t, described.Configs, 2)
	for _, e := range described.Configs {
		assert.Equal(t, kmsg.ConfigSourceDefaultConfig, e.Source, e.Name)
	}

	cases := []struct {
		name string
		op   kmsg.IncrementalAlterConfigsRequestResourceConfig
		err  *kerr.Error
		msg  string
	}{
		{"below the broker minimum", setOp("share.record.lock.duration.ms", "10000"), kerr.InvalidConfig,
			"share.record.lock.duration.ms must be greater than or equal to group.share.min.record.lock.duration.ms"},
		{"above the broker maximum", setOp("share.record.lock.duration.ms", "130000"), kerr.InvalidConfig,
			"share.record.lock.duration.ms must be less than or equal to group.share.max.record.lock.duration.ms"},
		{"below the config's own floor", setOp("share.record.lock.duration.ms", "500"), kerr.InvalidConfig,
			"Invalid value 500 for configuration share.record.lock.duration.ms: Value must be at least 1000"},
		{"delivery count above maximum", setOp("share.delivery.count.limit", "11"), kerr.InvalidConfig,
			"share.delivery.count.limit must be less than or equal to group.share.max.delivery.count.limit"},
		{"record locks below minimum", setOp("share.partition.max.record.locks", "50"), kerr.InvalidConfig,
			"Invalid value 50 for configuration share.partition.max.record.locks: Value must be at least 100"},
		{"session timeout above maximum", setOp("share.session.timeout.ms", "70000"), kerr.InvalidConfig,
			"share.session.timeout.ms must be less than or equal to group.share.max.session.timeout.ms"},
		{"heartbeat below minimum", setOp("consumer.heartbeat.interval.ms", "1000"), kerr.InvalidConfig,
			"consumer.heartbeat.interval.ms must be greater than or equal to group.consumer.min.heartbeat.interval.ms"},
		{"not a number", setOp("share.delivery.count.limit", "three"), kerr.InvalidConfig,
			"Invalid value three for configuration share.delivery.count.limit: Not a number of type INT"},
		{"unknown", setOp("share.fetch.max.bytes", "1"), kerr.InvalidConfig, "Unknown group config name: share.fetch.max.bytes"},
		{"offset reset", setOp("share.auto.offset.reset", "LATEST"), kerr.InvalidConfig,
			"Invalid value LATEST for configuration share.auto.offset.reset: Invalid value `LATEST` for configuration share.auto.offset.reset. " +
				"The value must be either 'earliest', 'latest' or of the format 'by_duration:<PnDTnHnMn.nS>'."},
		{"negative duration", setOp("share.auto.offset.reset", "by_duration:-PT1H"), kerr.InvalidConfig,
			"Invalid value by_duration:-PT1H for configuration share.auto.offset.reset: Invalid value `by_duration:-PT1H` for configuration share.auto.offset.reset. " +
				"The value must be either 'earliest', 'latest' or of the format 'by_duration:<PnDTnHnMn.nS>'."},
		{"isolation level", setOp("share.isolation.level", "serializable"), kerr.InvalidConfig,
			"Invalid value serializable for configuration share.isolation.level: String must be one of: read_committed, read_uncommitted"},
		{"append", kmsg.IncrementalAlterConfigsRequestResourceConfig{Name: "share.isolation.level", Op: kmsg.IncrementalAlterConfigOpAppend, Value: kmsg.StringPtr("x")},
			kerr.InvalidConfig, "Can't APPEND to key share.isolation.level because its type is not LIST."},
		{"null value", kmsg.IncrementalAlterConfigsRequestResourceConfig{Name: "share.delivery.count.limit"}, kerr.InvalidRequest,
			"Null value not supported for : share.delivery.count.limit"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res := alterGroupConfigs(t, ctx, cl, "shares", false, tc.op)
			assert.Equal(t, tc.err.Code, res.ErrorCode, kerr.ErrorForCode(res.ErrorCode))
			require.NotNil(t, res.ErrorMessage)
			assert.Equal(t, tc.msg, *res.ErrorMessage)
		})
	}

	res = alterGroupConfigs(t, ctx, cl, "", false, setOp("share.delivery.count.limit", "3"))
	assert.Equal(t, kerr.InvalidRequest.Code, res.ErrorCode)
	assert.Equal(t, "Default group resources are not allowed.", *res.ErrorMessage)
}

// TestIncrementalAlterConfigsRequestChecks: a resource listed twice and a config listed twice
// in one resource are refused before anything is applied.
func TestIncrementalAlterConfigsRequestChecks(t *testing.T) {
	t.Parallel()
	c := testbroker.StartT(t, testbroker.Topic("t", 1))
	ctx, cl, _ := adminClients(t, c)
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	for _, name := range []string{"g", "g"} {
		r := kmsg.NewIncrementalAlterConfigsRequestResource()
		r.ResourceType, r.ResourceName = kmsg.ConfigResourceTypeGroupConfig, name
		r.Configs = []kmsg.IncrementalAlterConfigsRequestResourceConfig{setOp("share.delivery.count.limit", "3")}
		req.Resources = append(req.Resources, r)
	}
	r := kmsg.NewIncrementalAlterConfigsRequestResource()
	r.ResourceType, r.ResourceName = kmsg.ConfigResourceTypeTopic, "t"
	r.Configs = []kmsg.IncrementalAlterConfigsRequestResourceConfig{setOp("retention.ms", "1"), setOp("retention.ms", "2")}
	req.Resources = append(req.Resources, r)
	resp, err := req.RequestWith(ctx, cl)
	require.NoError(t, err)
	require.Len(t, resp.Resources, 3)
	for _, res := range resp.Resources[:2] {
		assert.Equal(t, kerr.InvalidRequest.Code, res.ErrorCode)
		assert.Equal(t, "Each resource must appear at most once.", *res.ErrorMessage)
	}
	assert.Equal(t, kerr.InvalidRequest.Code, resp.Resources[2].ErrorCode)
	assert.Equal(t, "Error due to duplicate config keys", *resp.Resources[2].ErrorMessage)
	info, _ := c.Topic("t")
	assert.Empty(t, info.Configs)
}
