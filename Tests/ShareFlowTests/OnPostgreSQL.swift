// swift-format-ignore-file
// Written by Tests/postgres/twins.py (`make twins`); not edited by hand.
//
// Every store test case of the engine again on PostgreSQL, in the same `swift test`
// (SPEC §16 M6), when a cluster is at hand (SHAREFLOW_TEST_CLUSTER or
// SHAREFLOW_TEST_POSTGRES); skipped otherwise. Without a twin:
// - CatalogueTests: runs each test on both drivers itself (EachDriver).
// - DecisionLogTests: runs each test on both drivers itself (EachDriver).
// - FaultRuleTests: fault rules are matched in memory: no store.
// - ScopedWriteTests: runs each test on both drivers itself (EachDriver).
// - StatementCountTests: counts SQLite's statements through its trace hook.

import ShareFlowEngineTestKit
import XCTest

final class AccessRequestTestsOnPostgreSQL: AccessRequestTests {
    override func setUpWithError() throws { try TestStore.enterPostgresPass(); try super.setUpWithError() }
    override func tearDown() { super.tearDown(); TestStore.leavePostgresPass() }
    override func testR38OnlyTheOwnerOrAnAdministratorChangesWhetherAShareTakesRequests() throws { try super.testR38OnlyTheOwnerOrAnAdministratorChangesWhetherAShareTakesRequests() }
    override func testR38ANewShareMayTakeRequestsFromItsFirstSave() throws { try super.testR38ANewShareMayTakeRequestsFromItsFirstSave() }
    override func testR39ARequestIsRecordedOnceAndTheSilentAnswersAreTheSame() throws { try super.testR39ARequestIsRecordedOnceAndTheSilentAnswersAreTheSame() }
    override func testR40OnlyTheOwnerAndAdministratorsSeeRequesters() throws { try super.testR40OnlyTheOwnerAndAdministratorsSeeRequesters() }
    override func testR41ApproveDenyBlockUnblock() throws { try super.testR41ApproveDenyBlockUnblock() }
    override func testR41AStaleCopyDeniesNothing() throws { try super.testR41AStaleCopyDeniesNothing() }
    override func testR42RequestsPastTheCapAreDroppedWithTheSameAnswer() throws { try super.testR42RequestsPastTheCapAreDroppedWithTheSameAnswer() }
    override func testR42OldRequestsCloseAndTheAdministratorListsTheOpenOnes() throws { try super.testR42OldRequestsCloseAndTheAdministratorListsTheOpenOnes() }
    override func testStoreCheckFindsBrokenAccessInvariants() throws { try super.testStoreCheckFindsBrokenAccessInvariants() }
    override func testR43OnlyTheOwnerAndAdministratorsFeedsShowARequest() throws { try super.testR43OnlyTheOwnerAndAdministratorsFeedsShowARequest() }
    override func testAskingAgainSoonChangesNothing() throws { try super.testAskingAgainSoonChangesNothing() }
    override func testAskingThroughAnotherContainerRecordsNothing() throws { try super.testAskingThroughAnotherContainerRecordsNothing() }
    override func testR44TheFirstAcceptClaimsAOneTimeLink() throws { try super.testR44TheFirstAcceptClaimsAOneTimeLink() }
    override func testR42ABlockedIdentityJoinsNoPublicShare() throws { try super.testR42ABlockedIdentityJoinsNoPublicShare() }
}

final class AccountContainersTestsOnPostgreSQL: AccountContainersTests {
    override func setUpWithError() throws { try TestStore.enterPostgresPass(); try super.setUpWithError() }
    override func tearDown() { super.tearDown(); TestStore.leavePostgresPass() }
    override func testOwnedPendingAcceptedAndTokenContainersAreListedAndRemovedOnesAreNot() throws { try super.testOwnedPendingAcceptedAndTokenContainersAreListedAndRemovedOnesAreNot() }
}

final class AdministratorTestsOnPostgreSQL: AdministratorTests {
    override func setUpWithError() throws { try TestStore.enterPostgresPass(); try super.setUpWithError() }
    override func tearDown() { super.tearDown(); TestStore.leavePostgresPass() }
    override func testR26TheOwnerMakesAnAdministratorWhoManagesButCannotRule() throws { try super.testR26TheOwnerMakesAnAdministratorWhoManagesButCannotRule() }
}

final class AssetTestsOnPostgreSQL: AssetTests {
    override func setUpWithError() throws { try TestStore.enterPostgresPass(); try super.setUpWithError() }
    override func tearDown() { super.tearDown(); TestStore.leavePostgresPass() }
    override func testAFileAndBytesAreSavedWithTheRecordAndReadBackByteExact() throws { try super.testAFileAndBytesAreSavedWithTheRecordAndReadBackByteExact() }
    override func testAnAssetPastTheLimitIsLimitExceededAndNothingIsSaved() throws { try super.testAnAssetPastTheLimitIsLimitExceededAndNothingIsSaved() }
    override func testASharedRecordsAssetIsReadByItsParticipantsAndNoOneElse() throws { try super.testASharedRecordsAssetIsReadByItsParticipantsAndNoOneElse() }
    override func testAChecksumAloneAttachesNoBytesAndAStoredAssetMustBeInTheStore() throws { try super.testAChecksumAloneAttachesNoBytesAndAStoredAssetMustBeInTheStore() }
    override func testAReceiptIsRedeemedOnceByItsAccountForItsField() throws { try super.testAReceiptIsRedeemedOnceByItsAccountForItsField() }
    override func testAnAtomicBatchThatFailsKeepsTheReceiptAndLeavesOnlyAnOrphan() throws { try super.testAnAtomicBatchThatFailsKeepsTheReceiptAndLeavesOnlyAnOrphan() }
    override func testOrphansAreCollectedPastTheGraceAndWhatIsNamedStays() throws { try super.testOrphansAreCollectedPastTheGraceAndWhatIsNamedStays() }
    override func testASharesFieldsHoldNoAsset() throws { try super.testASharesFieldsHoldNoAsset() }
}

final class AtomicModifyTestsOnPostgreSQL: AtomicModifyTests {
    override func setUpWithError() throws { try TestStore.enterPostgresPass(); try super.setUpWithError() }
    override func tearDown() { super.tearDown(); TestStore.leavePostgresPass() }
    override func testR22AFailingShareLeavesItsRootUnsaved() throws { try super.testR22AFailingShareLeavesItsRootUnsaved() }
    override func testR22TheDefaultZoneIsNotAtomic() throws { try super.testR22TheDefaultZoneIsNotAtomic() }
    override func testR22Limits() throws { try super.testR22Limits() }
}

final class BusyStoreTestsOnPostgreSQL: BusyStoreTests {
    override func setUpWithError() throws { try TestStore.enterPostgresPass(); try super.setUpWithError() }
    override func tearDown() { super.tearDown(); TestStore.leavePostgresPass() }
    override func testABusyStoreIsServiceUnavailableWithRetryAfterAndThePathButNoSQL() throws { try super.testABusyStoreIsServiceUnavailableWithRetryAfterAndThePathButNoSQL() }
}

final class ChangeFeedBatchConvergenceTestsOnPostgreSQL: ChangeFeedBatchConvergenceTests {
    override func setUpWithError() throws { try TestStore.enterPostgresPass(); try super.setUpWithError() }
    override func tearDown() { super.tearDown(); TestStore.leavePostgresPass() }
    override func testBatchesConverge() throws { try super.testBatchesConverge() }
}

final class ChangeFeedConvergenceTestsOnPostgreSQL: ChangeFeedConvergenceTests {
    override func setUpWithError() throws { try TestStore.enterPostgresPass(); try super.setUpWithError() }
    override func tearDown() { super.tearDown(); TestStore.leavePostgresPass() }
    override func testReadersFollowingTheFeedsConvergeOnWhatTheyMayRead() throws { try super.testReadersFollowingTheFeedsConvergeOnWhatTheyMayRead() }
}

final class ChangeFeedTestsOnPostgreSQL: ChangeFeedTests {
    override func setUpWithError() throws { try TestStore.enterPostgresPass(); try super.setUpWithError() }
    override func tearDown() { super.tearDown(); TestStore.leavePostgresPass() }
    override func testTheOwnersZoneFeedGivesEachChangeOnceThenNothingWithTheSameToken() throws { try super.testTheOwnersZoneFeedGivesEachChangeOnceThenNothingWithTheSameToken() }
    override func testPagesFollowResultsLimitAndDesiredKeys() throws { try super.testPagesFollowResultsLimitAndDesiredKeys() }
    override func testBadTokensAndPlacesAreClearErrors() throws { try super.testBadTokensAndPlacesAreClearErrors() }
    override func testTokensAreOpaqueToTheirHolder() throws { try super.testTokensAreOpaqueToTheirHolder() }
    override func testAPrunedLogExpiresOlderTokens() throws { try super.testAPrunedLogExpiresOlderTokens() }
    override func testAFirstSyncAfterPruningPagesThroughToAGoodToken() throws { try super.testAFirstSyncAfterPruningPagesThroughToAGoodToken() }
    override func testTheCurrentDatabaseTokenIsWhereAFetchFromTheStartEnds() throws { try super.testTheCurrentDatabaseTokenIsWhereAFetchFromTheStartEnds() }
    override func testTheDatabaseFeedReportsExactlyTheZonesThatChangedForItsReader() throws { try super.testTheDatabaseFeedReportsExactlyTheZonesThatChangedForItsReader() }
    override func testAParticipantSeesTheSharedZoneComeAndGoWithItsRecords() throws { try super.testAParticipantSeesTheSharedZoneComeAndGoWithItsRecords() }
    override func testTheOwnersDatabaseFeedReportsZonesMadeChangedAndDeleted() throws { try super.testTheOwnersDatabaseFeedReportsZonesMadeChangedAndDeleted() }
}

final class ChangeLogMigrationTestsOnPostgreSQL: ChangeLogMigrationTests {
    override func setUpWithError() throws { try TestStore.enterPostgresPass(); try super.setUpWithError() }
    override func tearDown() { super.tearDown(); TestStore.leavePostgresPass() }
    override func testAStoreFromBeforeTheLogStartsItsFeedsFromItsContents() throws { try super.testAStoreFromBeforeTheLogStartsItsFeedsFromItsContents() }
    override func testAStoreWithTheV7LogKeepsItAndNamesEachEntrysRecord() throws { try super.testAStoreWithTheV7LogKeepsItAndNamesEachEntrysRecord() }
    override func testAnEntryWithoutItsRecordsRowIsReadByName() throws { try super.testAnEntryWithoutItsRecordsRowIsReadByName() }
    override func testAnEntryNamingAnotherRecordsRowIsReadByName() throws { try super.testAnEntryNamingAnotherRecordsRowIsReadByName() }
    override func testAV8StoresOwnerEntriesBecomeTheirRecordsPositions() throws { try super.testAV8StoresOwnerEntriesBecomeTheirRecordsPositions() }
    override func testASavepointRolledBackForgetsItsFeedMoves() throws { try super.testASavepointRolledBackForgetsItsFeedMoves() }
    override func testAReadInsideAWriteSeesThePositionsItTook() throws { try super.testAReadInsideAWriteSeesThePositionsItTook() }
    override func testANameMadeAgainIsSentAsItsRecordNotItsTombstone() throws { try super.testANameMadeAgainIsSentAsItsRecordNotItsTombstone() }
    override func testAV8StoreWithEntriesBeyondItsCounterAndAnEntryWithoutItsRecord() throws { try super.testAV8StoreWithEntriesBeyondItsCounterAndAnEntryWithoutItsRecord() }
}

final class ChangeLogVisibilityTestsOnPostgreSQL: ChangeLogVisibilityTests {
    override func setUpWithError() throws { try TestStore.enterPostgresPass(); try super.setUpWithError() }
    override func tearDown() { super.tearDown(); TestStore.leavePostgresPass() }
    override func testTheLogsVisibilityIsTheReadRuleInEveryCell() throws { try super.testTheLogsVisibilityIsTheReadRuleInEveryCell() }
    override func testThePredicateIsAProductNamingNoOwnerNorUnknownRole() { super.testThePredicateIsAProductNamingNoOwnerNorUnknownRole() }
}

final class ChangeTagTestsOnPostgreSQL: ChangeTagTests {
    override func setUpWithError() throws { try TestStore.enterPostgresPass(); try super.setUpWithError() }
    override func tearDown() { super.tearDown(); TestStore.leavePostgresPass() }
    override func testR21AStaleShareCopyIsRefusedAndNothingIsLost() throws { try super.testR21AStaleShareCopyIsRefusedAndNothingIsLost() }
    override func testR21EveryChangeOfAShareChangesItsTag() throws { try super.testR21EveryChangeOfAShareChangesItsTag() }
    override func testR21AStaleRecordCopyIsRefusedWithTheThreeRecords() throws { try super.testR21AStaleRecordCopyIsRefusedWithTheThreeRecords() }
    override func testR21ANewRecordWithAnExistingIDIsRefused() throws { try super.testR21ANewRecordWithAnExistingIDIsRefused() }
    override func testR21SavePoliciesChangedKeysAndAllKeys() throws { try super.testR21SavePoliciesChangedKeysAndAllKeys() }
    override func testR21RemoveThenReAddOfOnePersonInOneSaveKeepsThem() throws { try super.testR21RemoveThenReAddOfOnePersonInOneSaveKeepsThem() }
    override func testR11AppliesOnlyWhenThePublicPermissionReallyChanges() throws { try super.testR11AppliesOnlyWhenThePublicPermissionReallyChanges() }
}

final class CredentialTakeTestsOnPostgreSQL: CredentialTakeTests {
    override func setUpWithError() throws { try TestStore.enterPostgresPass(); try super.setUpWithError() }
    override func tearDown() { super.tearDown(); TestStore.leavePostgresPass() }
    override func testACredentialIsTakenOnceAndAnExpiredOneIsNone() throws { try super.testACredentialIsTakenOnceAndAnExpiredOneIsNone() }
    override func testOfTwoTakesAtOnceExactlyOneWins() throws { try super.testOfTwoTakesAtOnceExactlyOneWins() }
}

final class DamagedStoreTestsOnPostgreSQL: DamagedStoreTests {
    override func setUpWithError() throws { try TestStore.enterPostgresPass(); try super.setUpWithError() }
    override func tearDown() { super.tearDown(); TestStore.leavePostgresPass() }
    override func testABlobInFieldsFailsThatRecordAloneNamingTableRowAndColumn() throws { try super.testABlobInFieldsFailsThatRecordAloneNamingTableRowAndColumn() }
    override func testTextInModifiedAtABlobTagAndNullsAreEachNamed() throws { try super.testTextInModifiedAtABlobTagAndNullsAreEachNamed() }
    override func testFieldsThatAreNoJSONObjectOfFieldValuesAreDamagedNotEmpty() throws { try super.testFieldsThatAreNoJSONObjectOfFieldValuesAreDamagedNotEmpty() }
    override func testABlobRoleOrAnUnknownWordFailsTheShareAloneNamingTheParticipantRow() throws { try super.testABlobRoleOrAnUnknownWordFailsTheShareAloneNamingTheParticipantRow() }
    override func testADamagedAccountFailsWhereItIsReadAndNowhereElse() throws { try super.testADamagedAccountFailsWhereItIsReadAndNowhereElse() }
    override func testCheckListsEveryDamagedValueForeignObjectAndParentCycle() throws { try super.testCheckListsEveryDamagedValueForeignObjectAndParentCycle() }
    override func testCheckNamesLogPositionsPastTheCounterOrTaken() throws { try super.testCheckNamesLogPositionsPastTheCounterOrTaken() }
    override func testCheckNamesAChangedOrMissingObjectOfShareFlowsOwnAndNULLs() throws { try super.testCheckNamesAChangedOrMissingObjectOfShareFlowsOwnAndNULLs() }
    override func testAParentCycleNeverHangsTheEngine() throws { try super.testAParentCycleNeverHangsTheEngine() }
    override func testTheCheckReadsEveryColumnOfEveryTable() throws { try super.testTheCheckReadsEveryColumnOfEveryTable() }
    override func testCheckReadsEveryKindOfValueInEveryColumnWithoutTrapping() throws { try super.testCheckReadsEveryKindOfValueInEveryColumnWithoutTrapping() }
}

final class DefaultZoneTestsOnPostgreSQL: DefaultZoneTests {
    override func setUpWithError() throws { try TestStore.enterPostgresPass(); try super.setUpWithError() }
    override func tearDown() { super.tearDown(); TestStore.leavePostgresPass() }
    override func testR24ARecordWithoutAZoneGoesToTheDefaultZone() throws { try super.testR24ARecordWithoutAZoneGoesToTheDefaultZone() }
    override func testR24AnUntouchedDefaultZoneReadsEmpty() throws { try super.testR24AnUntouchedDefaultZoneReadsEmpty() }
}

final class DryRunReportTestsOnPostgreSQL: DryRunReportTests {
    override func setUpWithError() throws { try TestStore.enterPostgresPass(); try super.setUpWithError() }
    override func tearDown() { super.tearDown(); TestStore.leavePostgresPass() }
    override func testDeletingAZoneAndMakingAnotherIsNotARename() throws { try super.testDeletingAZoneAndMakingAnotherIsNotARename() }
    override func testRenamingAShareChangesTheShareNotItsParticipants() throws { try super.testRenamingAShareChangesTheShareNotItsParticipants() }
    override func testAccessRequestsBlocksAndLinksAreReported() throws { try super.testAccessRequestsBlocksAndLinksAreReported() }
}

final class EnvironmentTestsOnPostgreSQL: EnvironmentTests {
    override func setUpWithError() throws { try TestStore.enterPostgresPass(); try super.setUpWithError() }
    override func tearDown() { super.tearDown(); TestStore.leavePostgresPass() }
    override func testTheDefaultEnvironmentIsDevelopment() throws { try super.testTheDefaultEnvironmentIsDevelopment() }
    override func testZonesAndRecordsOfOneEnvironmentAreNotFoundInTheOther() throws { try super.testZonesAndRecordsOfOneEnvironmentAreNotFoundInTheOther() }
    override func testPublicDatabasesAreSeparate() throws { try super.testPublicDatabasesAreSeparate() }
    override func testAShareURLOfOneEnvironmentIsNotFoundInTheOther() throws { try super.testAShareURLOfOneEnvironmentIsNotFoundInTheOther() }
    override func testAuditsNameTheEnvironment() throws { try super.testAuditsNameTheEnvironment() }
    override func testAQueryCursorStaysInItsEnvironment() throws { try super.testAQueryCursorStaysInItsEnvironment() }
    override func testAnUnknownEnvironmentIsRefusedByName() { super.testAnUnknownEnvironmentIsRefusedByName() }
    override func testAV5StoreKeepsItsDataInDevelopment() throws { try super.testAV5StoreKeepsItsDataInDevelopment() }
}

final class FaultDelayTestsOnPostgreSQL: FaultDelayTests {
    override func setUpWithError() throws { try TestStore.enterPostgresPass(); try super.setUpWithError() }
    override func tearDown() { super.tearDown(); TestStore.leavePostgresPass() }
    override func testANativeRequestsItemDelaysAreCappedAsOverHTTP() throws { try super.testANativeRequestsItemDelaysAreCappedAsOverHTTP() }
}

final class FeedRecordEditTestsOnPostgreSQL: FeedRecordEditTests {
    override func setUpWithError() throws { try TestStore.enterPostgresPass(); try super.setUpWithError() }
    override func tearDown() { super.tearDown(); TestStore.leavePostgresPass() }
    override func testFeedRecordsBehaveAsFetchedOnes() throws { try super.testFeedRecordsBehaveAsFetchedOnes() }
    override func testZoneShareFromTheFeed() throws { try super.testZoneShareFromTheFeed() }
}

final class FreshObjectTestsOnPostgreSQL: FreshObjectTests {
    override func setUpWithError() throws { try TestStore.enterPostgresPass(); try super.setUpWithError() }
    override func tearDown() { super.tearDown(); TestStore.leavePostgresPass() }
    override func testR28AccountAndRecordObjectsReflectTheStore() throws { try super.testR28AccountAndRecordObjectsReflectTheStore() }
}

final class HotPathTestsOnPostgreSQL: HotPathTests {
    override func setUpWithError() throws { try TestStore.enterPostgresPass(); try super.setUpWithError() }
    override func tearDown() { super.tearDown(); TestStore.leavePostgresPass() }
    override func testUUIDStringsAreVersion4AndDistinct() { super.testUUIDStringsAreVersion4AndDistinct() }
    override func testRandomBytesAreNotConstant() { super.testRandomBytesAreNotConstant() }
    override func testASealedTokenIsKnownOnlyWithItsOwnKey() throws { try super.testASealedTokenIsKnownOnlyWithItsOwnKey() }
    override func testParticipantsComeInTheOrderTheyWereAdded() throws { try super.testParticipantsComeInTheOrderTheyWereAdded() }
    override func testStoredNamesReadBackAsJSONDecoderReadsThem() throws { try super.testStoredNamesReadBackAsJSONDecoderReadsThem() }
    override func testFetchedParticipantCarriesTheStoredName() throws { try super.testFetchedParticipantCarriesTheStoredName() }
    override func testObserversChangingTheListDuringDeliveryDoNotDisturbIt() throws { try super.testObserversChangingTheListDuringDeliveryDoNotDisturbIt() }
    override func testAcceptPolicyMakesTheShareOnlyWhenReadAndSeesItAsItWasBefore() throws { try super.testAcceptPolicyMakesTheShareOnlyWhenReadAndSeesItAsItWasBefore() }
}

final class KeysetPagingTestsOnPostgreSQL: KeysetPagingTests {
    override func setUpWithError() throws { try TestStore.enterPostgresPass(); try super.setUpWithError() }
    override func tearDown() { super.tearDown(); TestStore.leavePostgresPass() }
    override func testDeletesAndInsertsBetweenPagesNeitherHideNorRepeat() throws { try super.testDeletesAndInsertsBetweenPagesNeitherHideNorRepeat() }
    override func testStoreOrdersAreTheTotalOrder() throws { try super.testStoreOrdersAreTheTotalOrder() }
}

final class OperationsTestsOnPostgreSQL: OperationsTests {
    override func setUpWithError() throws { try TestStore.enterPostgresPass(); try super.setUpWithError() }
    override func tearDown() { super.tearDown(); TestStore.leavePostgresPass() }
    override func testPerItemOrderThenCompletionOnceInSwift() throws { try super.testPerItemOrderThenCompletionOnceInSwift() }
    override func testAnOperationLeftWaitingKeepsNoContainerAlive() throws { try super.testAnOperationLeftWaitingKeepsNoContainerAlive() }
    override func testQualityOfServiceOrdersTheQueue() throws { try super.testQualityOfServiceOrdersTheQueue() }
    override func testCancelBeforeRunCompletesEveryItemAsCancelled() throws { try super.testCancelBeforeRunCompletesEveryItemAsCancelled() }
    override func testAsyncForms() async throws { try await super.testAsyncForms() }
    override func testOperationFinishedEvent() throws { try super.testOperationFinishedEvent() }
    override func testAcceptOfAnotherContainerFailsPerItem() throws { try super.testAcceptOfAnotherContainerFailsPerItem() }
}

final class OrphanTestsOnPostgreSQL: OrphanTests {
    override func setUpWithError() throws { try TestStore.enterPostgresPass(); try super.setUpWithError() }
    override func tearDown() { super.tearDown(); TestStore.leavePostgresPass() }
    override func testAChildOutlivesItsParentAndCannotBeSavedUnderIt() throws { try super.testAChildOutlivesItsParentAndCannotBeSavedUnderIt() }
    override func testARecordMadeAgainAboveItsOrphansCannotGoUnderThem() throws { try super.testARecordMadeAgainAboveItsOrphansCannotGoUnderThem() }
    override func testDeepChainsKeepCoverageAndCycleChecks() throws { try super.testDeepChainsKeepCoverageAndCycleChecks() }
}

final class OwnRecordReadTestsOnPostgreSQL: OwnRecordReadTests {
    override func setUpWithError() throws { try TestStore.enterPostgresPass(); try super.setUpWithError() }
    override func tearDown() { super.tearDown(); TestStore.leavePostgresPass() }
    override func testItsAnswersAreTheGeneralPathsAnswers() throws { try super.testItsAnswersAreTheGeneralPathsAnswers() }
    override func testASharesReadIsTheWholeShare() throws { try super.testASharesReadIsTheWholeShare() }
}

final class OwnerFeedTestsOnPostgreSQL: OwnerFeedTests {
    override func setUpWithError() throws { try TestStore.enterPostgresPass(); try super.setUpWithError() }
    override func tearDown() { super.tearDown(); TestStore.leavePostgresPass() }
    override func testDeleteAndMakeAgainInOneTransaction() throws { try super.testDeleteAndMakeAgainInOneTransaction() }
    override func testPagesOfOneAcrossSupersededTombstonesAndTombstonesOnTop() throws { try super.testPagesOfOneAcrossSupersededTombstonesAndTombstonesOnTop() }
    override func testPruningASupersededTombstone() throws { try super.testPruningASupersededTombstone() }
    override func testRolledBackSavepointsHandOutNoPositionTwice() throws { try super.testRolledBackSavepointsHandOutNoPositionTwice() }
    override func testNamesMadeAgainInNestedTransactionsConverge() throws { try super.testNamesMadeAgainInNestedTransactionsConverge() }
    override func testTwoStoresOnOneFileInterleave() throws { try super.testTwoStoresOnOneFileInterleave() }
    override func testAZoneMadeAgainIsNotReadFromAnOldToken() throws { try super.testAZoneMadeAgainIsNotReadFromAnOldToken() }
    override func testAZoneDeletedAndMadeAgainInOneTransaction() throws { try super.testAZoneDeletedAndMadeAgainInOneTransaction() }
    override func testAnInvitationMatchedToANewAddressMovesTheSharesRecord() throws { try super.testAnInvitationMatchedToANewAddressMovesTheSharesRecord() }
}

final class ParentTestsOnPostgreSQL: ParentTests {
    override func setUpWithError() throws { try TestStore.enterPostgresPass(); try super.setUpWithError() }
    override func tearDown() { super.tearDown(); TestStore.leavePostgresPass() }
    override func testR25ParentsMustExistAndNeverCycle() throws { try super.testR25ParentsMustExistAndNeverCycle() }
}

final class PartialSaveTestsOnPostgreSQL: PartialSaveTests {
    override func setUpWithError() throws { try TestStore.enterPostgresPass(); try super.setUpWithError() }
    override func tearDown() { super.tearDown(); TestStore.leavePostgresPass() }
    override func testAPartialCopySavedBackUnchangedKeepsEveryKey() throws { try super.testAPartialCopySavedBackUnchangedKeepsEveryKey() }
    override func testAPartialCopyWritesItsEditsAndKeepsTheRest() throws { try super.testAPartialCopyWritesItsEditsAndKeepsTheRest() }
    override func testOnlyChangedKeysAreWrittenUnlessAllKeys() throws { try super.testOnlyChangedKeysAreWrittenUnlessAllKeys() }
    override func testAParticipantSavingThePartialRootOfTheMetadataKeepsItsOtherFields() throws { try super.testAParticipantSavingThePartialRootOfTheMetadataKeepsItsOtherFields() }
}

final class PostgresStoreTestsOnPostgreSQL: PostgresStoreTests {
    override func setUpWithError() throws { try TestStore.enterPostgresPass(); try super.setUpWithError() }
    override func tearDown() { super.tearDown(); TestStore.leavePostgresPass() }
    override func testTheURLIsReadAsTheSpecWritesIt() throws { try super.testTheURLIsReadAsTheSpecWritesIt() }
    override func testTheDialectRewritesOnlyWhatPostgreSQLSpellsOtherwise() { super.testTheDialectRewritesOnlyWhatPostgreSQLSpellsOtherwise() }
    override func testTheSessionTakesTheStatementTimeoutAndTheSchema() throws { try super.testTheSessionTakesTheStatementTimeoutAndTheSchema() }
    override func testAShareflowSchemaOfAnotherProgramIsRefusedUntouched() throws { try super.testAShareflowSchemaOfAnotherProgramIsRefusedUntouched() }
    override func testACopyToPostgreSQLAndBackKeepsEveryRowAndEveryPromise() throws { try super.testACopyToPostgreSQLAndBackKeepsEveryRowAndEveryPromise() }
    override func testALockedDecisionTableHoldsUpNoRequest() throws { try super.testALockedDecisionTableHoldsUpNoRequest() }
    override func testDecisionsWaitInABoundedQueueWhileTheTableIsLocked() throws { try super.testDecisionsWaitInABoundedQueueWhileTheTableIsLocked() }
    override func testACommitWhoseAnswerIsLostIsAskedAbout() throws { try super.testACommitWhoseAnswerIsLostIsAskedAbout() }
    override func testAClosingProcessSaysWhatItCouldNotWrite() throws { try super.testAClosingProcessSaysWhatItCouldNotWrite() }
    override func testAProcessWritingOneDecisionPrunesTheLog() throws { try super.testAProcessWritingOneDecisionPrunesTheLog() }
}

final class PreparedStatementTestsOnPostgreSQL: PreparedStatementTests {
    override func setUpWithError() throws { try TestStore.enterPostgresPass(); try super.setUpWithError() }
    override func tearDown() { super.tearDown(); TestStore.leavePostgresPass() }
    override func testAStatementFirstPreparedInAnAbortedTransactionFailsForEverAfter() throws { try super.testAStatementFirstPreparedInAnAbortedTransactionFailsForEverAfter() }
    override func testAnEngineWriteAfterALockTimeoutKeepsFailing() throws { try super.testAnEngineWriteAfterALockTimeoutKeepsFailing() }
    override func testNullThenValueThenNull() throws { try super.testNullThenValueThenNull() }
    override func testAsyncCallsFromSeveralTasksOnPostgreSQL() async throws { try await super.testAsyncCallsFromSeveralTasksOnPostgreSQL() }
}

final class QueryTestsOnPostgreSQL: QueryTests {
    override func setUpWithError() throws { try TestStore.enterPostgresPass(); try super.setUpWithError() }
    override func tearDown() { super.tearDown(); TestStore.leavePostgresPass() }
    override func testO7PredicateSortLimitAndCursor() throws { try super.testO7PredicateSortLimitAndCursor() }
    override func testListMembershipAndTheOtherSpellings() throws { try super.testListMembershipAndTheOtherSpellings() }
    override func testNotAndDistanceInTheFormatAndASortByDistance() throws { try super.testNotAndDistanceInTheFormatAndASortByDistance() }
    override func testAFormTheParserDoesNotKnowIsInvalidArguments() throws { try super.testAFormTheParserDoesNotKnowIsInvalidArguments() }
    override func testO7ThroughTheOperationWithBothBlockNames() throws { try super.testO7ThroughTheOperationWithBothBlockNames() }
    override func testO7BadPredicatesAndNamesAreInvalidArguments() throws { try super.testO7BadPredicatesAndNamesAreInvalidArguments() }
    override func testO7HonoursR12InTheSharedDatabase() throws { try super.testO7HonoursR12InTheSharedDatabase() }
    override func testO8AuditListsEveryShareWithEveryParticipant() throws { try super.testO8AuditListsEveryShareWithEveryParticipant() }
}

final class MatchSetTestsOnPostgreSQL: MatchSetTests {
    override func setUpWithError() throws { try TestStore.enterPostgresPass(); try super.setUpWithError() }
    override func tearDown() { super.tearDown(); TestStore.leavePostgresPass() }
    override func testTheHashedSetAgreesWithTheOrderEverywhere() { super.testTheHashedSetAgreesWithTheOrderEverywhere() }
    override func testReferencesCompareInOneOrder() { super.testReferencesCompareInOneOrder() }
}

final class ReadsBesideTestsOnPostgreSQL: ReadsBesideTests {
    override func setUpWithError() throws { try TestStore.enterPostgresPass(); try super.setUpWithError() }
    override func tearDown() { super.tearDown(); TestStore.leavePostgresPass() }
    override func testAReadGoesOnWhileAnotherThreadHoldsTheLockInTheMiddleOfAWrite() throws { try super.testAReadGoesOnWhileAnotherThreadHoldsTheLockInTheMiddleOfAWrite() }
    override func testEventsOfAReadBesideReachObserversUnderTheLockAfterTheRead() throws { try super.testEventsOfAReadBesideReachObserversUnderTheLockAfterTheRead() }
    override func testManyReadersAndAWriterTogetherLoseNothing() throws { try super.testManyReadersAndAWriterTogetherLoseNothing() }
    override func testReadersWriterAndObserversTogether() throws { try super.testReadersWriterAndObserversTogether() }
    override func testAnInMemoryStoreHasNoReader() throws { try super.testAnInMemoryStoreHasNoReader() }
}

final class RecordLimitsTestsOnPostgreSQL: RecordLimitsTests {
    override func setUpWithError() throws { try TestStore.enterPostgresPass(); try super.setUpWithError() }
    override func tearDown() { super.tearDown(); TestStore.leavePostgresPass() }
    override func testARecordHoldsAtMost1024Fields() throws { try super.testARecordHoldsAtMost1024Fields() }
}

final class RecordMetadataTestsOnPostgreSQL: RecordMetadataTests {
    override func setUpWithError() throws { try TestStore.enterPostgresPass(); try super.setUpWithError() }
    override func tearDown() { super.tearDown(); TestStore.leavePostgresPass() }
    override func testCreationStaysAndTheLastModifierIsWhoeverSavedLast() throws { try super.testCreationStaysAndTheLastModifierIsWhoeverSavedLast() }
    override func testQueriesFilterAndSortOnTheMetadata() throws { try super.testQueriesFilterAndSortOnTheMetadata() }
    override func testThePublicDatabaseIsWorldReadableAndCreatorWritable() throws { try super.testThePublicDatabaseIsWorldReadableAndCreatorWritable() }
}

final class RecordPropertyTestsOnPostgreSQL: RecordPropertyTests {
    override func setUpWithError() throws { try TestStore.enterPostgresPass(); try super.setUpWithError() }
    override func tearDown() { super.tearDown(); TestStore.leavePostgresPass() }
    override func testPartialCopiesNeverLoseAField() throws { try super.testPartialCopiesNeverLoseAField() }
    override func testPublicWritersChangeOnlyTheirOwnRecords() throws { try super.testPublicWritersChangeOnlyTheirOwnRecords() }
    override func testPagesUnderConcurrentEditsNeitherSkipNorRepeat() throws { try super.testPagesUnderConcurrentEditsNeitherSkipNorRepeat() }
}

final class RecordValueTestsOnPostgreSQL: RecordValueTests {
    override func setUpWithError() throws { try TestStore.enterPostgresPass(); try super.setUpWithError() }
    override func tearDown() { super.tearDown(); TestStore.leavePostgresPass() }
    override func testR23EveryValueTypeIsKeptExactly() throws { try super.testR23EveryValueTypeIsKeptExactly() }
    override func testR23InvalidValuesAndNamesAreInvalidArgumentsNamingTheField() throws { try super.testR23InvalidValuesAndNamesAreInvalidArgumentsNamingTheField() }
    override func testR23NULIsRefusedInEveryIdentifier() throws { try super.testR23NULIsRefusedInEveryIdentifier() }
}

final class ReentrantPolicyTestsOnPostgreSQL: ReentrantPolicyTests {
    override func setUpWithError() throws { try TestStore.enterPostgresPass(); try super.setUpWithError() }
    override func tearDown() { super.tearDown(); TestStore.leavePostgresPass() }
    override func testAnAcceptPolicyDeletingTheShareGivesUnknownItem() throws { try super.testAnAcceptPolicyDeletingTheShareGivesUnknownItem() }
    override func testAnAcceptPolicyDeletingAPublicShareAStrangerJoinsGivesUnknownItem() throws { try super.testAnAcceptPolicyDeletingAPublicShareAStrangerJoinsGivesUnknownItem() }
    override func testAnAcceptPolicyDeletingTheZoneOrTheRootGivesUnknownItem() throws { try super.testAnAcceptPolicyDeletingTheZoneOrTheRootGivesUnknownItem() }
    override func testAnAcceptPolicyRemovingTheParticipantDecidesOnTheRemoval() throws { try super.testAnAcceptPolicyRemovingTheParticipantDecidesOnTheRemoval() }
    override func testASavePolicyDeletingTheShareOrItsZoneFailsThatShare() throws { try super.testASavePolicyDeletingTheShareOrItsZoneFailsThatShare() }
    override func testASavePolicyDeletingANewSharesRootOrZoneFailsTheNewShare() throws { try super.testASavePolicyDeletingANewSharesRootOrZoneFailsTheNewShare() }
    override func testAPublicPermissionPolicyDeletingTheShareGivesUnknownItem() throws { try super.testAPublicPermissionPolicyDeletingTheShareGivesUnknownItem() }
    override func testAParticipantAddPolicyDeletingTheShareGivesUnknownItem() throws { try super.testAParticipantAddPolicyDeletingTheShareGivesUnknownItem() }
    override func testAPolicyThatOnlyReadsLeavesTheItemAlone() throws { try super.testAPolicyThatOnlyReadsLeavesTheItemAlone() }
}

final class RulesTestsOnPostgreSQL: RulesTests {
    override func setUpWithError() throws { try TestStore.enterPostgresPass(); try super.setUpWithError() }
    override func tearDown() { super.tearDown(); TestStore.leavePostgresPass() }
    override func testR1LookupNormalisationAndErrors() throws { try super.testR1LookupNormalisationAndErrors() }
    override func testR2IdentityRevealsNameOnlyWhenDiscoverable() throws { try super.testR2IdentityRevealsNameOnlyWhenDiscoverable() }
    override func testR3SharingOnlyInPrivateCustomZones() throws { try super.testR3SharingOnlyInPrivateCustomZones() }
    override func testR5ShareWithoutRootAndAlreadyShared() throws { try super.testR5ShareWithoutRootAndAlreadyShared() }
    override func testR6URLsAreRandomAndStable() throws { try super.testR6URLsAreRandomAndStable() }
    override func testR7R8ParticipantDefaultsAndLimit() throws { try super.testR7R8ParticipantDefaultsAndLimit() }
    override func testR11PublicPermissionRemovesPendingThenAll() throws { try super.testR11PublicPermissionRemovesPendingThenAll() }
    override func testR12R18AcceptIsAtomicAndVisibilityFollowsStatus() throws { try super.testR12R18AcceptIsAtomicAndVisibilityFollowsStatus() }
    override func testR13R14WritesDeletesAndLeaving() throws { try super.testR13R14WritesDeletesAndLeaving() }
    override func testR16R17VerificationFlow() throws { try super.testR16R17VerificationFlow() }
    override func testR19R20DiscoveryNeverRevealsNonDiscoverable() throws { try super.testR19R20DiscoveryNeverRevealsNonDiscoverable() }
    override func testDataPersistsAcrossEngines() throws { try super.testDataPersistsAcrossEngines() }
}

final class ShareInterleavingTestsOnPostgreSQL: ShareInterleavingTests {
    override func setUpWithError() throws { try TestStore.enterPostgresPass(); try super.setUpWithError() }
    override func tearDown() { super.tearDown(); TestStore.leavePostgresPass() }
    override func testRandomInterleavingsNeverSplitObjectAndStore() throws { try super.testRandomInterleavingsNeverSplitObjectAndStore() }
    override func testRandomAccessRequestInterleavingsKeepR38ToR43() throws { try super.testRandomAccessRequestInterleavingsKeepR38ToR43() }
    override func testPartialCopiesPublicWritersAndPagingUnderConcurrentEdits() throws { try super.testPartialCopiesPublicWritersAndPagingUnderConcurrentEdits() }
}

final class ShareParticipantConflictTestsOnPostgreSQL: ShareParticipantConflictTests {
    override func setUpWithError() throws { try TestStore.enterPostgresPass(); try super.setUpWithError() }
    override func tearDown() { super.tearDown(); TestStore.leavePostgresPass() }
    override func testAStaleCopyCannotChangeParticipantsUnderAnyPolicy() throws { try super.testAStaleCopyCannotChangeParticipantsUnderAnyPolicy() }
    override func testAStaleCopyThatLeavesParticipantsAloneSaves() throws { try super.testAStaleCopyThatLeavesParticipantsAloneSaves() }
}

final class ShareScopingTestsOnPostgreSQL: ShareScopingTests {
    override func setUpWithError() throws { try TestStore.enterPostgresPass(); try super.setUpWithError() }
    override func tearDown() { super.tearDown(); TestStore.leavePostgresPass() }
    override func testMovingAnAncestorOfAShareUnderAnotherShareIsAlreadyShared() throws { try super.testMovingAnAncestorOfAShareUnderAnotherShareIsAlreadyShared() }
    override func testMakingAgainAboveAnotherSharesRootIsAlreadyShared() throws { try super.testMakingAgainAboveAnotherSharesRootIsAlreadyShared() }
    override func testAParticipantCannotTakeARecordOutOfTheShareByClearingItsParent() throws { try super.testAParticipantCannotTakeARecordOutOfTheShareByClearingItsParent() }
    override func testAParticipantCannotPullOrphansBackIntoTheShare() throws { try super.testAParticipantCannotPullOrphansBackIntoTheShare() }
    override func testOneParticipantObjectOnTwoSharesGetsAPlaceOnEach() throws { try super.testOneParticipantObjectOnTwoSharesGetsAPlaceOnEach() }
    override func testADeleteAtAStaleTagIsRefusedInTheTransaction() throws { try super.testADeleteAtAStaleTagIsRefusedInTheTransaction() }
}

final class SharedScopePrivacyTestsOnPostgreSQL: SharedScopePrivacyTests {
    override func setUpWithError() throws { try TestStore.enterPostgresPass(); try super.setUpWithError() }
    override func tearDown() { super.tearDown(); TestStore.leavePostgresPass() }
    override func testAnOutsideRecordAnswersAsAMissingOne() throws { try super.testAnOutsideRecordAnswersAsAMissingOne() }
    override func testAPendingInviteesSharedDatabaseIsAStrangers() throws { try super.testAPendingInviteesSharedDatabaseIsAStrangers() }
}

final class StoredFieldsCheckerTestsOnPostgreSQL: StoredFieldsCheckerTests {
    override func setUpWithError() throws { try TestStore.enterPostgresPass(); try super.setUpWithError() }
    override func tearDown() { super.tearDown(); TestStore.leavePostgresPass() }
    override func testTheCheckPassesOnlyWhatTheReaderReads() throws { try super.testTheCheckPassesOnlyWhatTheReaderReads() }
    override func testRandomAndDamagedFieldsNeverPassWhatTheReaderRefuses() throws { try super.testRandomAndDamagedFieldsNeverPassWhatTheReaderRefuses() }
    override func testARecordWithUndecodedFieldsBehavesAsOneDecoded() throws { try super.testARecordWithUndecodedFieldsBehavesAsOneDecoded() }
    override func testADamagedFieldsColumnFailsThePageNamingIt() throws { try super.testADamagedFieldsColumnFailsThePageNamingIt() }
}

final class StrangerTestsOnPostgreSQL: StrangerTests {
    override func setUpWithError() throws { try TestStore.enterPostgresPass(); try super.setUpWithError() }
    override func tearDown() { super.tearDown(); TestStore.leavePostgresPass() }
    override func testR27AZoneNotSharedWithTheCallerAnswersAsAMissingOne() throws { try super.testR27AZoneNotSharedWithTheCallerAnswersAsAMissingOne() }
    override func testR27MetadataForAStrangerDoesTheSameWorkForALiveAndAMadeUpURL() throws { try super.testR27MetadataForAStrangerDoesTheSameWorkForALiveAndAMadeUpURL() }
}

final class SubscriptionTestsOnPostgreSQL: SubscriptionTests {
    override func setUpWithError() throws { try TestStore.enterPostgresPass(); try super.setUpWithError() }
    override func tearDown() { super.tearDown(); TestStore.leavePostgresPass() }
    override func testSubscriptionsAreSavedListedFetchedAndDeletedAndSavingAgainIsIdempotent() throws { try super.testSubscriptionsAreSavedListedFetchedAndDeletedAndSavingAgainIsIdempotent() }
    override func testWhatASubscriptionMayNameIsCheckedBeforeItIsSaved() throws { try super.testWhatASubscriptionMayNameIsCheckedBeforeItIsSaved() }
    override func testTheOwnersZoneSubscriptionFiresOnAParticipantsWriteAndTheStrangersGetsNothing() throws { try super.testTheOwnersZoneSubscriptionFiresOnAParticipantsWriteAndTheStrangersGetsNothing() }
    override func testAParticipantIsToldOfTheSharedHierarchyOnly() throws { try super.testAParticipantIsToldOfTheSharedHierarchyOnly() }
    override func testAQuerySubscriptionGivesCreatedUpdatedDeletedInOrderWithItsFields() throws { try super.testAQuerySubscriptionGivesCreatedUpdatedDeletedInOrderWithItsFields() }
    override func testFiresOnAndFiresOnce() throws { try super.testFiresOnAndFiresOnce() }
    override func testAQueueKeepsTheNewestAndCountsWhatItDropped() throws { try super.testAQueueKeepsTheNewestAndCountsWhatItDropped() }
    override func testTheWritersOwnClientIsNotToldWhenItAsks() throws { try super.testTheWritersOwnClientIsNotToldWhenItAsks() }
    override func testPublicQuerySubscriptionsHearEveryonesRecords() throws { try super.testPublicQuerySubscriptionsHearEveryonesRecords() }
    override func testAThousandSubscriptionsOnAZoneDoNotCostTheWriteAndAreDispatchedInBoundedJobs() throws { try super.testAThousandSubscriptionsOnAZoneDoNotCostTheWriteAndAreDispatchedInBoundedJobs() }
    override func testAChangeMadeOutsideAParticipantsViewIsNotToldOnceTheRecordMovesIn() throws { try super.testAChangeMadeOutsideAParticipantsViewIsNotToldOnceTheRecordMovesIn() }
    override func testSubscriptionsCostingTooMuchTogetherAreRefused() throws { try super.testSubscriptionsCostingTooMuchTogetherAreRefused() }
    override func testAChangeCostingMoreThanAJobIsDispatchedAcrossJobsEachNotificationOnce() throws { try super.testAChangeCostingMoreThanAJobIsDispatchedAcrossJobsEachNotificationOnce() }
    override func testAnObserversOwnWriteIsDispatchedToo() throws { try super.testAnObserversOwnWriteIsDispatchedToo() }
    override func testOneZonesBacklogDoesNotHoldUpAnothersNotifications() throws { try super.testOneZonesBacklogDoesNotHoldUpAnothersNotifications() }
    override func testANotificationIsKeptWithinFourKilobytes() throws { try super.testANotificationIsKeptWithinFourKilobytes() }
    override func testAnotherUsersWriteWithMyClientIDStillReachesMe() throws { try super.testAnotherUsersWriteWithMyClientIDStillReachesMe() }
}

final class ViewerFeedTestsOnPostgreSQL: ViewerFeedTests {
    override func setUpWithError() throws { try TestStore.enterPostgresPass(); try super.setUpWithError() }
    override func tearDown() { super.tearDown(); TestStore.leavePostgresPass() }
    override func testAShareMadeInATransactionThatSavedInAFlatZone() throws { try super.testAShareMadeInATransactionThatSavedInAFlatZone() }
    override func testAcceptLeaveRemoveAndPermissionSequencesConverge() throws { try super.testAcceptLeaveRemoveAndPermissionSequencesConverge() }
    override func testAcceptsInsideATransactionWithSaves() throws { try super.testAcceptsInsideATransactionWithSaves() }
    override func testARootDeletedAndMadeAgain() throws { try super.testARootDeletedAndMadeAgain() }
}

final class WriteWaitTestsOnPostgreSQL: WriteWaitTests {
    override func setUpWithError() throws { try TestStore.enterPostgresPass(); try super.setUpWithError() }
    override func tearDown() { super.tearDown(); TestStore.leavePostgresPass() }
    override func testAWriteThatMayNotWaitFailsAtOnceHavingWrittenNothing() throws { try super.testAWriteThatMayNotWaitFailsAtOnceHavingWrittenNothing() }
    override func testReadEventsOfAnAttemptRunAgainAreNotDelivered() throws { try super.testReadEventsOfAnAttemptRunAgainAreNotDelivered() }
    override func testAnAcceptThatChangesNothingTakesNoWriteLock() throws { try super.testAnAcceptThatChangesNothingTakesNoWriteLock() }
}
