"""HTTP routers, one module per resource; routers never touch SQL or the engine directly."""
