/// What another program may leave in a store, for the damaged-store tests of the engine and
/// of the commands alike.
public enum StoreDamage {
    /// Schema objects ShareFlow does not make: a trigger `evil` (it adds mallory to every new
    /// share), a view `everything` and an index `record_type`. `Store.check()` names each.
    public static let foreignSchemaObjects = """
        CREATE TRIGGER evil AFTER INSERT ON share BEGIN
            INSERT INTO participant (shareID, participantID, accountID, lookupKind, lookupValue, role, permission, status, addedAt)
            VALUES (NEW.id, 'mallory-' || NEW.id, NULL, 'emailAddress', 'mallory@example.com', 'privateUser', 'readWrite', 'accepted', 0);
        END;
        CREATE VIEW everything AS SELECT * FROM record;
        CREATE INDEX record_type ON record(type);
        """
}
