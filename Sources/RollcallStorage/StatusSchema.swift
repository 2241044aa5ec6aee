import GRDB

/// The versioned SQLite schema of the status store. Migrations only ever get appended; a
/// database written by a newer build (unknown migrations) is refused at open.
enum StatusSchema {
    static var migrator: DatabaseMigrator {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("v1: users, subscriptions, meta") { db in
            try db.execute(sql: """
                CREATE TABLE user_status (
                    user_id TEXT NOT NULL PRIMARY KEY,
                    status TEXT NOT NULL CHECK (status IN ('online', 'offline', 'loggedOut')),
                    custom_status TEXT,
                    custom_status_expires_at INTEGER,
                    last_update_time INTEGER NOT NULL,
                    last_online_status_update_time INTEGER NOT NULL,
                    last_custom_status_update_time INTEGER NOT NULL,
                    last_session_ended_at INTEGER
                ) WITHOUT ROWID;
                CREATE TABLE subscription (
                    subscriber TEXT NOT NULL,
                    target TEXT NOT NULL,
                    created_at INTEGER NOT NULL,
                    expires_at INTEGER NOT NULL,
                    PRIMARY KEY (subscriber, target)
                ) WITHOUT ROWID;
                CREATE TABLE meta (
                    key TEXT NOT NULL PRIMARY KEY,
                    value INTEGER NOT NULL
                ) WITHOUT ROWID;
                """)
        }
        migrator.registerMigration("v2: subscription by target") { db in
            // Lets a backend (or an operator) list a user's subscribers without a scan.
            try db.execute(sql: "CREATE INDEX subscription_by_target ON subscription (target, subscriber)")
        }
        migrator.registerMigration("v3: user status version, webhook events") { db in
            // The record's version (1.2: `userStatus` webhook events carry it), and the webhook
            // events not acknowledged yet (PROTOCOL §11 "Nothing lost"), oldest first.
            try db.execute(sql: """
                ALTER TABLE user_status ADD COLUMN version INTEGER NOT NULL DEFAULT 0;
                CREATE TABLE webhook_event (
                    number INTEGER PRIMARY KEY AUTOINCREMENT,
                    body BLOB NOT NULL
                );
                """)
        }
        return migrator
    }
}
