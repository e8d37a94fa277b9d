package metadata

import (
	"fmt"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kshare/kshare/testbroker/internal/kafkaerr"
)

// maxTopicNameLength is Kafka's limit (Topic.MAX_NAME_LENGTH).
const maxTopicNameLength = 249

// ValidateTopicName applies Kafka's topic name rules (Topic.validate) with its messages.
func ValidateTopicName(name string) error {
	reason := ""
	switch {
	case name == "":
		reason = "the empty string is not allowed"
	case name == "." || name == "..":
		reason = "'" + name + "' is not allowed"
	case len(name) > maxTopicNameLength:
		reason = fmt.Sprintf("the length of '%s' is longer than the max allowed length %d", name, maxTopicNameLength)
	case strings.IndexFunc(name, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-')
	}) >= 0:
		reason = "'" + name + "' contains one or more characters other than ASCII alphanumerics, '.', '_' and '-'"
	default:
		return nil
	}
	return kafkaerr.New(kerr.InvalidTopicException, "Topic name is invalid: %s", reason)
}

// checkNewNameLocked refuses a topic name that exists, or that collides with an existing one.
func (c *Controller) checkNewNameLocked(name string) error {
	if _, ok := c.topics[name]; ok {
		return kafkaerr.New(kerr.TopicAlreadyExists, "Topic '%s' already exists.", name)
	}
	if !strings.ContainsAny(name, "._") {
		return nil
	}
	unified := strings.ReplaceAll(name, ".", "_")
	for existing := range c.topics {
		if strings.ReplaceAll(existing, ".", "_") == unified {
			return kafkaerr.New(kerr.InvalidTopicException, "Topic '%s' collides with existing topic: %s", name, existing)
		}
	}
	return nil
}
