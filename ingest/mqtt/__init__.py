"""The MQTT side: the service's persistent session, publishing people's entries, the embedded broker, alerts out on MQTT."""
