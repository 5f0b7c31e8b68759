"""What leaves the store for people and tools: the records the law asks for and the data export."""
