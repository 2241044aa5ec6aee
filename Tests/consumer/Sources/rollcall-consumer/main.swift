import RollcallClient

// Creates a client the way an app would, without connecting anywhere.
let runtime = try ClientRuntime(options: .init(maxConnections: 16))
let connection = try RollcallConnection(url: "ws://127.0.0.1:8080/v1", subprotocol: "rollcall.v1", runtime: runtime)
print("consumer: created a client for \(connection.url)")
runtime.shutdown()
