import tensorflow as tf
import numpy as np
import time

def augment_image(image):
    image = tf.image.random_brightness(image, max_delta=0.2)
    image = tf.image.random_flip_left_right(image)
    return image

def create_tfrecord_dataset(num_images=400, output_file="sample.tfrecord"):
    with tf.io.TFRecordWriter(output_file) as writer:
        for _ in range(num_images):
            image = np.random.randint(0, 256, size=(256, 256, 3), dtype=np.uint8)
            label = np.random.randint(0, 10)
            example = tf.train.Example(
              features=tf.train.Features(
                  feature={
                      'image': tf.train.Feature(bytes_list=tf.train.BytesList(value=[image.tobytes()])),
                      'label': tf.train.Feature(int64_list=tf.train.Int64List(value=[label])),
                  }
              ))
            writer.write(example.SerializeToString())
    return output_file

def load_tfrecord_dataset(batch_size, tfrecord_file):
    def _parse_function(serialized_example):
        feature_description = {
            'image': tf.io.FixedLenFeature([], tf.string),
            'label': tf.io.FixedLenFeature([], tf.int64),
        }
        example = tf.io.parse_single_example(serialized_example, feature_description)
        image = tf.io.decode_raw(example['image'], tf.uint8)
        image = tf.reshape(image, (256, 256, 3))
        image = tf.cast(image, tf.float32) / 255.0
        image = augment_image(image)
        label = tf.cast(example['label'], tf.int32)
        return image, label

    dataset = tf.data.TFRecordDataset(tfrecord_file)
    dataset = dataset.map(_parse_function, num_parallel_calls=tf.data.AUTOTUNE)
    dataset = dataset.batch(batch_size)
    dataset = dataset.prefetch(tf.data.AUTOTUNE)
    return dataset

tfrecord_file = create_tfrecord_dataset()
batch_size = 32
dataset = load_tfrecord_dataset(batch_size, tfrecord_file)

start_time = time.time()
for i, (images, labels) in enumerate(dataset):
    if i > 10:
      break;
    pass # Placeholder for model training
end_time = time.time()

print(f"Data loading and augmentation from TFRecord time: {end_time - start_time:.4f} seconds")
