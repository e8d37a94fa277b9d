package main

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kshare/kshare/testbroker"
)

// TestDeleteOffsets deletes offsets of an empty share group (kafka-share-groups.sh's output,
// per topic), of an empty KIP-848 consumer group and of a classic group (kafka-consumer-groups.sh's,
// per partition), and refuses a group that does not exist in the broker's words.
func TestDeleteOffsets(t *testing.T) {
	t.Parallel()
	f := newGroupsFixture(t, testbroker.Topic("unused", 1))
	f.shareGroup(t, "sg", 3, 4)
	f.consumerGroup(t, "cg", true, 3, 4)
	f.consumerGroup(t, "classic", false, 3, 4)

	rc, stdout, stderr := f.run(t, "--delete-offsets", "--group", "sg", "--topic", ordersTopic, "--topic", "nope", "--topic", "unused")
	require.Equal(t, 0, rc, stderr)
	assert.Equal(t, "\n"+
		"TOPIC           STATUS\n"+
		"nope            Error: This server does not host this topic-partition.\n"+
		"orders          Successful\n"+
		"unused          Error: There is no offset information to delete.\n", stdout)
	assert.Empty(t, f.offsets(t, "sg", true))

	rc, stdout, _ = f.run(t, "--delete-offsets", "--group", "sg", "--topic", ordersTopic)
	require.Equal(t, 0, rc)
	assert.Equal(t, "\nTOPIC           STATUS\norders          Error: There is no offset information to delete.\n", stdout)

	rc, stdout, _ = f.run(t, "--delete-offsets", "--group", "nobody", "--topic", ordersTopic)
	assert.Equal(t, 0, rc)
	assert.Equal(t, "\nError: Group nobody not found.\n\nTOPIC           STATUS\norders          Error: Group nobody not found.\n", stdout)

	for _, g := range []string{"cg", "classic"} {
		rc, stdout, stderr := f.run(t, "--delete-offsets", "--group", g, "--topic", ordersTopic+":1", "--topic", "nope")
		require.Equal(t, 0, rc, stderr)
		assert.Equal(t, "Request succeeded for deleting offsets from group "+g+".\n"+
			"\nTOPIC           PARTITION  STATUS         "+
			"\nnope            -          Error: org.apache.kafka.common.errors.UnknownTopicOrPartitionException: Topic nope not found."+
			"\norders          1          Successful     \n", stdout, g)
		assert.Equal(t, map[int32]int64{0: 3}, f.offsets(t, g, false), g)
	}
}

// TestDeleteOffsetsActiveGroups: a share group with members is NON_EMPTY_GROUP; a consumer
// group subscribed to the topic is GROUP_SUBSCRIBED_TO_TOPIC on each partition.
func TestDeleteOffsetsActiveGroups(t *testing.T) {
	t.Parallel()
	c := testbroker.StartT(t, testbroker.Topic(demoTopic, 3))
	stop, err := seedDemoGroups(testCtx(t), c.Addrs())
	require.NoError(t, err)
	t.Cleanup(stop)

	rc, stdout, _ := runOn(t, c, "--delete-offsets", "--group", demoShare, "--topic", demoQueue)
	assert.Equal(t, 0, rc)
	assert.Equal(t, "\nError: The group is not empty.\n\nTOPIC           STATUS\ndemo-queue      Error: The group is not empty.\n", stdout)

	for _, g := range []string{demoConsumer, demoClassic} {
		rc, stdout, _ := runOn(t, c, "--delete-offsets", "--group", g, "--topic", demoTopic+":0,2")
		assert.Equal(t, 0, rc, g)
		status := "Error: org.apache.kafka.common.errors.GroupSubscribedToTopicException: Deleting offsets of a topic is forbidden while the consumer group is actively subscribed to it."
		assert.Equal(t, "\nError: Encountered some partition-level error, see the follow-up details.\n"+
			"\nTOPIC           PARTITION  STATUS         "+
			"\ndemo            0          "+status+
			"\ndemo            2          "+status+"\n", stdout, g)
	}
}

// TestDeleteGroups deletes groups of each type one by one and with --all-groups, and reports
// the groups that could not be deleted in the words of the tool each follows.
func TestDeleteGroups(t *testing.T) {
	t.Parallel()
	f := newGroupsFixture(t, testbroker.Topic(demoTopic, 3))
	f.shareGroup(t, "sg", 3, 4)
	f.consumerGroup(t, "cg", true, 3, 4)
	f.consumerGroup(t, "classic", false, 3, 4)

	rc, stdout, stderr := f.run(t, "--delete", "--group", "sg")
	require.Equal(t, 0, rc, stderr)
	assert.Equal(t, "Deletion of requested share groups ('sg') was successful.\n", stdout)
	rc, stdout, _ = f.run(t, "--delete", "--group", "cg")
	require.Equal(t, 0, rc)
	assert.Equal(t, "Deletion of requested consumer groups ('cg') was successful.\n", stdout)

	rc, stdout, _ = f.run(t, "--delete", "--group", "sg")
	assert.Equal(t, 0, rc)
	assert.Equal(t, "\nError: Deletion of some share groups failed:\n"+
		"* Group 'sg' could not be deleted due to: org.apache.kafka.common.errors.GroupIdNotFoundException: Group 'sg' is not a share group.\n", stdout)

	f.shareGroup(t, "sg3", 1, 1)
	f.consumerGroup(t, "cg3", true, 1, 1)
	rc, stdout, _ = f.run(t, "--delete", "--group", "sg3", "--group", "cg3")
	require.Equal(t, 0, rc)
	assert.Equal(t, "Deletion of requested share groups ('sg3') was successful.\n"+
		"Deletion of requested consumer groups ('cg3') was successful.\n", stdout, "several --group, each by its own tool")

	stop, err := seedDemoGroups(testCtx(t), f.c.Addrs())
	require.NoError(t, err)
	t.Cleanup(stop)
	f.shareGroup(t, "sg2", 0, 0)
	f.consumerGroup(t, "cg2", true, 1, 1)

	rc, stdout, _ = f.run(t, "--delete", "--group", demoShare)
	assert.Equal(t, 0, rc)
	assert.Equal(t, "\nError: Deletion of some share groups failed:\n"+
		"* Group 'demo-share' could not be deleted due to: org.apache.kafka.common.errors.GroupNotEmptyException: Share group 'demo-share' is not EMPTY.\n", stdout)

	rc, stdout, _ = f.run(t, "--delete", "--group", demoConsumer)
	assert.Equal(t, 0, rc)
	assert.Equal(t, "\nError: Deletion of some consumer groups failed:\n"+
		"* Group 'demo-consumer' could not be deleted due to: org.apache.kafka.common.errors.GroupNotEmptyException: The group is not empty.\n", stdout)

	rc, stdout, _ = f.run(t, "--delete", "--all-groups")
	assert.Equal(t, 0, rc)
	notEmpty := "org.apache.kafka.common.errors.GroupNotEmptyException: The group is not empty."
	assert.Equal(t, "\nError: Deletion of some share groups failed:\n"+
		"* Group 'demo-share' could not be deleted due to: org.apache.kafka.common.errors.GroupNotEmptyException: Share group 'demo-share' is not EMPTY.\n"+
		"\nThese share groups were deleted successfully: 'sg2'\n"+
		"\nError: Deletion of some consumer groups failed:\n"+
		fmt.Sprintf("* Group '%s' could not be deleted due to: %s\n", demoClassic, notEmpty)+
		fmt.Sprintf("* Group '%s' could not be deleted due to: %s\n", demoConsumer, notEmpty)+
		"\nThese consumer groups were deleted successfully: 'cg2', 'classic'\n", stdout)
	listed, err := f.adm.ListGroups(testCtx(t))
	require.NoError(t, err)
	assert.ElementsMatch(t, []string{demoShare, demoClassic, demoConsumer, demoConnect}, listed.Groups(),
		"the connect group is not a consumer group; the groups with members stay")
}
