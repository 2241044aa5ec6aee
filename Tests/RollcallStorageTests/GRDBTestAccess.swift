import GRDB

/// Direct database edits the tests use to fake files written by other builds.
enum GRDBTestAccess {
    /// Records a migration this build does not know, as a newer build would have.
    static func insertMigration(_ identifier: String, into path: String) throws {
        let queue = try DatabaseQueue(path: path)
        try queue.write { db in
            try db.execute(sql: "INSERT INTO grdb_migrations (identifier) VALUES (?)", arguments: [identifier])
        }
        try queue.close()
    }
}
