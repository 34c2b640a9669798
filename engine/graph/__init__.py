"""The graph builder: state schemas, nodes, edges and branches."""
