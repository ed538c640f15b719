"""The benchmark a node runs on itself (`runner`, stdlib + optional torch) and its parser."""
