"""The Pregel run model: tasks in supersteps, writes applied at the barrier."""
