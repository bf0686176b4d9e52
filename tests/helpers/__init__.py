"""What several test folders share: S3 request counting (:mod:`.s3`) and the
fixture that makes chunk reads decode block by block (:mod:`.blocks`)."""
