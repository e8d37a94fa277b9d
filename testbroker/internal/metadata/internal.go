package metadata

// CreateInternalTopic creates internal topic name with the given replicas and configs (already
// validated) unless it exists. Internal topics do not count as created topics for the
// placement of later topics.
func (c *Controller) CreateInternalTopic(name string, replicas [][]int32, configs map[string]string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.topics[name]; ok {
		return
	}
	t := &Topic{Name: name, ID: c.newTopicIDLocked(), configs: configs}
	c.addPartitionsLocked(t, replicas)
	c.topics[name] = t
	c.topicIDs[t.ID] = t
}
